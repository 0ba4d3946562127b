//! What an authorizer is asked and answers (kube's `authorizer.Attributes` and `Decision`),
//! and the mode that picks the authorizer: the part of authorization that knows nothing of the
//! server's state, so the config and the RBAC policy can name it.

use http::Method;

use crate::request::{Query, ResourceRequest, Verb};

/// `--authorization-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Everything is allowed (kube-apiserver's default).
    #[default]
    AlwaysAllow,
    /// RBAC, with `system:masters` allowed everything.
    Rbac,
}

/// The group whose members pass every authorization check (kube's
/// `user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";

/// What a request asks, as an authorizer sees it (kube's `authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, ... for resources; the lowercase HTTP method for
    /// other paths; `impersonate` and the like for checks the server makes itself.
    pub verb: String,
    /// A request to a resource (else to a path such as `/healthz`).
    pub resource_request: bool,
    /// The request path (non-resource requests are judged by it).
    pub path: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    /// kube's `RequestInfo` of a request: a resource request when the path parses as one,
    /// else a non-resource request with the lowercase method as its verb. A list or watch
    /// selecting one name by field (`metadata.name=x`) is about that name, as in kube, so
    /// `resourceNames` rules apply to it.
    pub fn of_request(method: &Method, path: &str, query: &Query, request: Option<&ResourceRequest>) -> Attributes {
        let Some(r) = request else {
            return Attributes {
                verb: method.as_str().to_ascii_lowercase(),
                path: path.to_string(),
                ..Attributes::default()
            };
        };
        let mut name = r.name.clone().unwrap_or_default();
        if matches!(r.verb, Verb::List | Verb::Watch) && (name.is_empty() || r.legacy_watch) {
            let selected = query.get("fieldSelector").and_then(name_selected_by);
            if let Some(selected) = selected {
                name = selected;
            }
        }
        Attributes {
            verb: r.verb.as_str().to_string(),
            resource_request: true,
            path: path.to_string(),
            api_group: r.group.clone(),
            api_version: r.version.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone().unwrap_or_default(),
            namespace: r.namespace.clone().unwrap_or_default(),
            name,
        }
    }

    /// `resource` or `resource/subresource`, as kube's messages and rules name it.
    pub fn resource_and_subresource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// The name a field selector requires exactly (`metadata.name=x` or `==`), if a valid path
/// segment (kube's `RequiresExactMatch` then `IsValidPathSegmentName`).
fn name_selected_by(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        if field.trim() != "metadata.name" || field.ends_with('!') {
            return None;
        }
        let value = value.trim();
        let valid = !value.is_empty() && value != "." && value != ".." && !value.contains(['/', '%']);
        valid.then(|| value.to_string())
    })
}

/// An authorizer's answer, with its reason (kube's `Decision` and reason string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    /// Not allowed; the reason (often empty) goes after the forbidden message.
    Deny(String),
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(reason) | Decision::Deny(reason) => reason,
        }
    }
}
