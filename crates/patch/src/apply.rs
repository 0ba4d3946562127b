//! Server-side apply (`application/apply-patch+yaml`) and the ownership
//! tracking of every write (`metadata.managedFields`), as a pure library.
//!
//! This follows kube-apiserver 1.32: structured-merge-diff v4 (field sets,
//! merging, ownership) and apimachinery's `pkg/util/managedfields` (the
//! chain of managers around it). A [`FieldManager`] does for one endpoint
//! (kind, version, subresource) what kube's does:
//!
//! * [`FieldManager::apply`]: the configuration is merged into the live
//!   object (maps by key, list-maps by their keys, sets by value, atomic
//!   values replaced), the applier's fields become exactly the
//!   configuration's, fields it applied before and dropped now are removed
//!   unless someone else owns them, and fields another manager owns with a
//!   different value are conflicts (409) unless forced, when they move to
//!   the applier. An object without managedFields first gives everything to
//!   `before-first-apply`. For the manager `kubectl`, conflicts with what
//!   client-side apply last applied are forced and the
//!   `last-applied-configuration` annotation is kept up to date.
//! * [`FieldManager::update`]: a create, update or non-apply patch gives the
//!   fields it changed to its manager (an `Update` entry) and takes them
//!   from everyone else; client-written managedFields are honoured, `[]`
//!   resets them, and an update of an object that has none keeps none.
//! * Housekeeping: entries of one manager merged, empty ones dropped, at
//!   most 10 `Update` entries (older ones folded into `ancient-changes`),
//!   entries sorted as kube sorts them, FieldsV1 byte for byte as kube
//!   writes it.
//!
//! [`upgrade_managed_fields_patch`] is kubectl's client side of the move
//! from client-side to server-side apply, for tests that act as kubectl.
//!
//! The caller does what kube-apiserver does around the field manager:
//! decoding the YAML body, defaulting and validating the result, resetting
//! the fields a subresource may not change, and storing it (an apply whose
//! result equals the live object is a no-op).
//!
//! Simplifications, besides those of the submodules:
//! * Objects are JSON, not Go structs: for a create, the "empty object" an
//!   `Update` compares against is `{apiVersion, kind}` (or
//!   [`FieldManager::with_empty_object`]), while kube compares built-ins
//!   against their zero Go value, which holds `spec: {}`-like parents; so
//!   kube's `Update` entries of built-ins lack some `"."` members that ours
//!   have (`"f:spec":{".":{},…}`). Apply entries are unaffected.
//! * `null` map entries left by pruning or set by the configuration are
//!   dropped from the result, as kube's decoding does for built-ins and null
//!   pruning for custom resources (not for `nullable` fields).
//! * Scalar types are not checked against the schema; built-in kinds have
//!   only the list and map facts of [`crate::builtin_schema`], so
//!   undeclared fields are not refused for them.
//! * Several conflicts are listed (causes too) by manager identifier, then
//!   field; kube lists the causes in Go map order across managers.
//! * The merged object keeps the live object's key order with new keys
//!   after; kube reorders (struct order for built-ins, sorted for custom
//!   resources).

mod conflict;
mod csa_upgrade;
mod fieldpath;
pub mod fields_v1;
mod last_applied;
mod managed;
mod manager_name;
mod schema;
mod typed;
mod updater;

use serde_json::{Value, json};

pub use crate::schema::ListType;
pub use conflict::{ApplyError, Conflict};
pub use csa_upgrade::{upgrade_managed_fields, upgrade_managed_fields_patch};
pub use fieldpath::{FieldSet, Path, PathElement, path_string};
pub use last_applied::LAST_APPLIED_ANNOTATION;
pub use managed::{ANCIENT_CHANGES, MAX_UPDATE_MANAGERS, ManagedFieldsEntry, Operation, identifier, read_entries};
pub use manager_name::{
    BEFORE_FIRST_APPLY, FIELD_MANAGER_MAX_LENGTH, KUBECTL, KUBECTL_CLIENT_SIDE_APPLY, KUBECTL_LAST_APPLIED,
    UNKNOWN_MANAGER, kubectl_manager, manager_or_user_agent, prefix_from_user_agent,
};
pub use schema::{ApplySchema, DeducedSchema, MapType, OpenApiSchema, list_type_of_strategy};

use managed::{Managed, VersionedSet};
use typed::{validate, validation_message};
use updater::Updater;

/// The temporary manager an update's changes are computed for before they
/// join the real manager's entry (kube's `managedFieldsUpdater`).
const CURRENT_OPERATION: &str = "current-operation";

/// Applies `config` to `live` (`None` to create) as `manager`, for the
/// kind and version of `live` (or of `config` when creating); see
/// [`FieldManager::apply`]. `now` is the RFC 3339 time recorded on changed
/// entries.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    schema: &dyn ApplySchema,
    now: &str,
) -> Result<Value, ApplyError> {
    let source = live.unwrap_or(config);
    FieldManager::new(schema, text(source, "apiVersion"), text(source, "kind")).apply(live, config, manager, force, now)
}

/// Records a create, update or non-apply patch by `manager` (to
/// `subresource` if given) that turned `live_old` into `live_new`; returns
/// `live_new` with managedFields set. See [`FieldManager::update`].
pub fn update(
    live_old: &Value,
    live_new: &Value,
    manager: &str,
    subresource: Option<&str>,
    schema: &dyn ApplySchema,
    now: &str,
) -> Value {
    FieldManager::new(schema, text(live_new, "apiVersion"), text(live_new, "kind"))
        .with_subresource(subresource.unwrap_or_default())
        .update(live_old, live_new, manager, now)
}

fn text<'v>(object: &'v Value, key: &str) -> &'v str {
    object.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Tracks field ownership for one endpoint: a kind in one version, maybe a
/// subresource (kube's `FieldManager` with its default chain).
pub struct FieldManager<'s> {
    schema: &'s dyn ApplySchema,
    api_version: String,
    kind: String,
    subresource: String,
    reset_fields: FieldSet,
    empty_object: Option<Value>,
}

impl<'s> FieldManager<'s> {
    /// The field manager of `kind` in `api_version` (e.g. `apps/v1`).
    pub fn new(schema: &'s dyn ApplySchema, api_version: &str, kind: &str) -> FieldManager<'s> {
        FieldManager {
            schema,
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            subresource: String::new(),
            reset_fields: FieldSet::new(),
            empty_object: None,
        }
    }

    /// For writes to a subresource (`status`, `scale`): entries carry it,
    /// and updates ignore managedFields in the request body.
    pub fn with_subresource(mut self, subresource: &str) -> FieldManager<'s> {
        self.subresource = subresource.to_owned();
        self
    }

    /// The fields this endpoint resets (kube's `ResetFieldsStrategy`, e.g.
    /// `status` on a main resource with a status subresource): they are
    /// never owned through it nor compared for conflicts.
    pub fn with_reset_fields(mut self, fields: FieldSet) -> FieldManager<'s> {
        self.reset_fields = fields;
        self
    }

    /// The object a create is compared against (default
    /// `{"apiVersion": …, "kind": …}`).
    pub fn with_empty_object(mut self, object: Value) -> FieldManager<'s> {
        self.empty_object = Some(object);
        self
    }

    fn empty_object(&self) -> Value {
        self.empty_object.clone().unwrap_or_else(|| json!({"apiVersion": self.api_version, "kind": self.kind}))
    }

    fn updater(&self) -> Updater<'_> {
        Updater { schema: self.schema, ignored: &self.reset_fields }
    }

    /// Server-side apply of `config` by `manager` to `live` (`None` when
    /// the object does not exist yet). Returns the new object with its
    /// managedFields; it equals `live` when the apply changed nothing.
    ///
    /// Errors: [`ApplyError::BadRequest`] for a configuration of another
    /// kind or version (`invalid object type: apps/v1, Kind=Deployment`) or
    /// one carrying `metadata.managedFields`; [`ApplyError::Internal`] for one
    /// that does not fit the schema (`failed to create typed patch object
    /// (…): …`) or live managedFields that do not decode;
    /// [`ApplyError::Conflict`] for conflicts without `force`.
    pub fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        let now = normalized_time(now);
        let live = live.cloned().unwrap_or_else(|| self.empty_object());
        let managed = managed::decode(&live)
            .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?;
        let (api_version, kind) = (text(config, "apiVersion"), text(config, "kind"));
        if api_version != self.api_version || kind != self.kind || kind.is_empty() {
            return Err(ApplyError::BadRequest(format!("invalid object type: {}", gvk_string(api_version, kind))));
        }
        let mut result = self.apply_tracked(&live, config, &managed, manager, force, &now);
        if manager == KUBECTL {
            if let Err(ApplyError::Conflict(conflicts)) = &result {
                if let Some(allowed) = last_applied::allowed_conflicts(&live, &self.api_version, self.schema) {
                    let remaining: Vec<Conflict> =
                        conflicts.iter().filter(|c| !allowed.has(&c.path)).cloned().collect();
                    result = if remaining.is_empty() {
                        self.apply_tracked(&live, config, &managed, manager, true, &now)
                    } else {
                        Err(ApplyError::Conflict(remaining))
                    };
                }
            }
        }
        let (mut object, managed) = result?;
        if manager == KUBECTL && last_applied::has_last_applied(&object) {
            last_applied::set_last_applied(&mut object, last_applied::build_last_applied(config));
        }
        managed::encode_into(&mut object, &managed);
        Ok(object)
    }

    /// The apply below kube's last-applied managers: `before-first-apply`
    /// for untracked objects, then the structured merge.
    fn apply_tracked(
        &self,
        live: &Value,
        config: &Value,
        managed: &Managed,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<(Value, Managed), ApplyError> {
        let mut managed = managed.clone();
        if managed.fields.is_empty() {
            let empty = self.empty_object();
            managed = self
                .update_tracked(&empty, live, managed, BEFORE_FIRST_APPLY, now)
                .map_err(|e| ApplyError::Internal(format!("failed to create manager for existing fields: {e}")))?;
        }
        if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
            return Err(ApplyError::BadRequest("metadata.managedFields must be nil".to_owned()));
        }
        let errors = validate(config, self.schema, false);
        if !errors.is_empty() {
            return Err(ApplyError::Internal(format!(
                "failed to create typed patch object ({}): {}",
                object_gvknn(config),
                validation_message(&errors)
            )));
        }
        let errors = validate(live, self.schema, true);
        if !errors.is_empty() {
            return Err(ApplyError::Internal(format!(
                "failed to create typed live object ({}): {}",
                object_gvknn(live),
                validation_message(&errors)
            )));
        }
        let id = identifier(manager_name::recorded(manager), Operation::Apply, "", &self.subresource);
        let new = self
            .updater()
            .apply(live, config, &self.api_version, &mut managed.fields, &id, force)
            .map_err(ApplyError::Conflict)?;
        managed::strip(&mut managed, &id);
        let object = match new {
            Some(mut object) => {
                typed::drop_nulls(&mut object);
                managed.times.insert(id, Some(now.to_owned()));
                object
            }
            None => {
                let mut object = live.clone();
                managed::set_managed_fields(&mut object, None);
                object
            }
        };
        Ok((object, managed))
    }

    /// Records a create, update or non-apply patch by `manager` that turned
    /// `live_old` into `live_new` (for a create, `live_old` is the empty
    /// object of the kind, without a uid). Returns `live_new` with its
    /// managedFields: those of the request body if it has valid ones (`[]`
    /// clears them), else the live object's, updated with this write. An
    /// update of an object without managedFields keeps none, and so does an
    /// object that does not fit the schema (kube's `UpdateNoErrors`).
    pub fn update(&self, live_old: &Value, live_new: &Value, manager: &str, now: &str) -> Value {
        let now = normalized_time(now);
        let managed = self.decode_live_or_new(live_old, live_new);
        let mut new = live_new.clone();
        managed::set_managed_fields(&mut new, None);
        let is_create = live_old.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().is_empty();
        if managed.fields.is_empty() && !is_create {
            return new;
        }
        if let Ok(managed) = self.update_tracked(live_old, &new, managed, manager, &now) {
            managed::encode_into(&mut new, &managed);
        }
        new
    }

    /// kube's `decodeLiveOrNew`.
    fn decode_live_or_new(&self, live_old: &Value, live_new: &Value) -> Managed {
        let live = || managed::decode(live_old).unwrap_or_default();
        if !self.subresource.is_empty() {
            return live();
        }
        if is_reset(live_new.pointer("/metadata/managedFields")) {
            return Managed::default();
        }
        match managed::decode(live_new) {
            Ok(managed) if !managed.fields.is_empty() => managed,
            _ => live(),
        }
    }

    /// The update below kube's skip-non-applied manager: the changes are
    /// computed for a temporary manager, stripped, merged into `manager`'s
    /// `Update` entry (whose time is refreshed only if it gained fields),
    /// and the entries capped.
    fn update_tracked(
        &self,
        old: &Value,
        new: &Value,
        mut managed: Managed,
        manager: &str,
        now: &str,
    ) -> Result<Managed, String> {
        let errors = validate(new, self.schema, true);
        if !errors.is_empty() {
            return Err(format!(
                "failed to convert new object ({}) to smd typed: {}",
                object_gvknn(new),
                validation_message(&errors)
            ));
        }
        let errors = validate(old, self.schema, true);
        if !errors.is_empty() {
            return Err(format!(
                "failed to convert live object ({}) to smd typed: {}",
                object_gvknn(old),
                validation_message(&errors)
            ));
        }
        let id = identifier(manager_name::recorded(manager), Operation::Update, &self.api_version, &self.subresource);
        self.updater().update(old, new, &self.api_version, &mut managed.fields, CURRENT_OPERATION);
        managed::strip(&mut managed, CURRENT_OPERATION);
        if let Some(changed) = managed.fields.remove(CURRENT_OPERATION) {
            let set = match managed.fields.get(&id) {
                Some(previous) => changed.set.union(&previous.set),
                None => changed.set,
            };
            managed.fields.insert(id.clone(), VersionedSet { set, api_version: changed.api_version, applied: false });
            managed.times.insert(id, Some(now.to_owned()));
        }
        managed::cap_update_managers(&mut managed, MAX_UPDATE_MANAGERS);
        Ok(managed)
    }
}

/// kube's `isResetManagedFields`: `[]`, or a single empty entry.
fn is_reset(entries: Option<&Value>) -> bool {
    match entries {
        Some(Value::Array(entries)) => match entries.as_slice() {
            [] => true,
            [Value::Object(entry)] => entry.values().all(|v| v.is_null() || v.as_str() == Some("")),
            _ => false,
        },
        _ => false,
    }
}

/// `now` normalized as kube writes times (UTC, whole seconds).
fn normalized_time(now: &str) -> String {
    managed::parse_rfc3339(now).map_or_else(|| now.to_owned(), listwatch_gocompat::time::format_rfc3339)
}

/// A GroupVersionKind as Go prints it: `apps/v1, Kind=Deployment`,
/// `/v1, Kind=Pod`, `/, Kind=` (an apiVersion with more than one `/` has
/// neither group nor version).
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] => ("", ""),
        [version] => ("", *version),
        [group, version] => (*group, *version),
        _ => ("", ""),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// kube's `objectGVKNN`: `namespace/name; group/version, Kind=Kind`.
fn object_gvknn(object: &Value) -> String {
    let meta = |key: &str| object.pointer(&format!("/metadata/{key}")).and_then(Value::as_str).unwrap_or_default();
    format!("{}/{}; {}", meta("namespace"), meta("name"), gvk_string(text(object, "apiVersion"), text(object, "kind")))
}

impl FieldSet {
    /// A set of field-name paths written dotted, e.g. `["status",
    /// "metadata.labels"]`: handy for reset fields.
    pub fn from_dotted(paths: &[&str]) -> FieldSet {
        let mut set = FieldSet::new();
        for path in paths {
            let path: Path = path.split('.').map(PathElement::field).collect();
            set.insert(&path);
        }
        set
    }

    /// The set written as FieldsV1.
    pub fn to_fields_v1(&self) -> Value {
        fields_v1::encode(self)
    }

    /// The fields `object` sets, by `schema` (structured-merge-diff's
    /// `ToFieldSet`): every leaf, every atomic list or map, every list-map
    /// or set item (with, for list-maps, its key fields), and map entries
    /// that are `null`, `{}` or keys of maps with arbitrary keys.
    pub fn of_object(object: &Value, schema: &dyn ApplySchema) -> FieldSet {
        typed::to_field_set(object, schema)
    }
}

#[cfg(test)]
mod tests;
