//! One write's admission request: who writes what, where and how, and the warnings the
//! webhooks return. Kept apart from the admission steps ([`super`]) so that the webhooks,
//! which read a request, do not import the module that calls them.

use listwatch_apiextensions::schema::cel::Activation;
use listwatch_meta::Resource;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::authn::UserInfo;
use crate::state::ApiState;

/// kube's admission operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// As AdmissionReview and webhook rules spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The kind of the options object AdmissionReview carries for it.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// The admission of one write request.
pub struct Admission<'a> {
    pub(crate) state: &'a ApiState,
    pub(crate) user: &'a UserInfo,
    pub(crate) resource: &'static Resource,
    pub(crate) subresource: Option<&'a str>,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) operation: Operation,
    pub(crate) dry_run: bool,
    /// The request's options as AdmissionReview's `options` (`CreateOptions`, ...).
    pub(crate) options: Value,
    warnings: Mutex<Vec<String>>,
}

impl<'a> Admission<'a> {
    /// The admission of `operation` on `resource` (or its `subresource`) in `namespace`, by
    /// `user`, with the request's field manager and dry-run flag.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        state: &'a ApiState,
        user: &'a UserInfo,
        resource: &'static Resource,
        subresource: Option<&'a str>,
        namespace: Option<&'a str>,
        operation: Operation,
        dry_run: bool,
        field_manager: Option<&str>,
    ) -> Admission<'a> {
        let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": operation.options_kind()});
        if dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
            options["fieldManager"] = json!(manager);
        }
        Admission {
            state,
            user,
            resource,
            subresource,
            namespace,
            operation,
            dry_run,
            options,
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// The warnings the webhooks returned so far, for the response's `Warning` headers.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().clone()
    }

    pub(crate) fn warn(&self, warnings: impl IntoIterator<Item = String>) {
        self.warnings.lock().extend(warnings);
    }

    /// The request as admission sees it, without its objects: AdmissionReview's `request`
    /// fields and CEL's `request` variable (`kind`, `resource`, `subResource`, `name`,
    /// `namespace`, `operation`, `userInfo`, `dryRun`, `options`, and the `request*` forms).
    pub(crate) fn attributes(&self, name: &str) -> Map<String, Value> {
        let resource = self.resource;
        let kind = json!({"group": resource.group, "version": resource.version, "kind": resource.kind});
        let gvr = json!({"group": resource.group, "version": resource.version, "resource": resource.plural});
        let user = self.user;
        let mut user_info = json!({"username": user.name});
        if !user.uid.is_empty() {
            user_info["uid"] = json!(user.uid);
        }
        if !user.groups.is_empty() {
            user_info["groups"] = json!(user.groups);
        }
        if !user.extra.is_empty() {
            user_info["extra"] = json!(user.extra);
        }
        let mut request = Map::new();
        request.insert("kind".into(), kind.clone());
        request.insert("resource".into(), gvr.clone());
        request.insert("requestKind".into(), kind);
        request.insert("requestResource".into(), gvr);
        request.insert("operation".into(), json!(self.operation.as_str()));
        request.insert("userInfo".into(), user_info);
        request.insert("dryRun".into(), json!(self.dry_run));
        request.insert("options".into(), self.options.clone());
        if let Some(sub) = self.subresource.filter(|s| !s.is_empty()) {
            request.insert("subResource".into(), json!(sub));
            request.insert("requestSubResource".into(), json!(sub));
        }
        if !name.is_empty() {
            request.insert("name".into(), json!(name));
        }
        let namespace = match self.namespace {
            Some(ns) if !ns.is_empty() => Some(ns),
            // A namespace's own requests carry its name as their namespace.
            _ if resource.group.is_empty() && resource.plural == "namespaces" && !name.is_empty() => Some(name),
            _ => None,
        };
        if let Some(ns) = namespace {
            request.insert("namespace".into(), json!(ns));
        }
        request
    }

    /// What CEL expressions about this request see: `object` (null for a delete), `oldObject`
    /// (null for a create), `request`, and `params` and `namespaceObject` when given.
    pub(crate) fn activation(
        &self,
        name: &str,
        old: Option<&Map<String, Value>>,
        new: Option<&Map<String, Value>>,
        params: Option<&Value>,
        namespace: Option<&Value>,
    ) -> Activation {
        let object = new.map_or(Value::Null, |o| Value::Object(o.clone()));
        let old_object = old.map_or(Value::Null, |o| Value::Object(o.clone()));
        let request = Value::Object(self.attributes(name));
        let params = params.cloned().unwrap_or(Value::Null);
        let namespace = namespace.cloned().unwrap_or(Value::Null);
        Activation::new(&[
            ("object", &object),
            ("oldObject", &old_object),
            ("request", &request),
            ("params", &params),
            ("namespaceObject", &namespace),
        ])
    }
}
