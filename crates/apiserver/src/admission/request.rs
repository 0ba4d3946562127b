//! One write's admission request: who writes what, where and how, and the warnings the
//! webhooks return. Kept apart from the admission steps ([`super`]) so that the webhooks,
//! which read a request, do not import the module that calls them.

use listwatch_meta::Resource;
use parking_lot::Mutex;
use serde_json::{Value, json};

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
}
