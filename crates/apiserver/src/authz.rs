//! Authorization: may this user do what the request asks? kube-apiserver's authorizer chain
//! as `--authorization-mode` builds it (`pkg/kubeapiserver/authorizer/config.go`):
//!
//! * `AlwaysAllow`, kube-apiserver's own default and ours: every request goes through;
//! * `RBAC`: members of `system:masters` may do anything (kube's privileged-group authorizer,
//!   first in its chain, so a broken policy cannot lock the admin out); everyone else gets
//!   what their RoleBindings and ClusterRoleBindings grant ([`rbac`]), and a 403 otherwise,
//!   with kube's message.
//!
//! Authorization runs after authentication and impersonation ([`impersonation`]), before the
//! router: a path that routes nowhere is refused before it is found missing, as in kube, and a
//! watch is authorized once, when it starts. The attributes are kube's `RequestInfo` of the
//! request ([`Attributes::of_request`]); [`reviews`] answers the access reviews with the same
//! authorizer, and [`bootstrap`] writes the default roles kube-apiserver writes at start.

pub mod attributes;
pub mod bootstrap;
pub mod escalation;
pub mod impersonation;
pub mod rbac;
pub mod reviews;

use listwatch_meta::ApiError;
use listwatch_meta::GroupResource;
use listwatch_meta::validation::go_quote;

use crate::authn::UserInfo;
use crate::state::ApiState;

pub use attributes::{Attributes, AuthorizationMode, Decision, SYSTEM_MASTERS};

/// The RBAC policy as the four RBAC resources' caches hold it now.
pub async fn policy(state: &ApiState) -> std::sync::Arc<rbac::Policy> {
    let stores: Vec<_> = rbac::RESOURCES.iter().map(|plural| state.store_of(rbac::resource(plural)).clone()).collect();
    state.rbac.get(&stores).await
}

/// Whether `user` may do what `attributes` describe, under the server's mode.
pub async fn authorize(state: &ApiState, user: &UserInfo, attributes: &Attributes) -> Decision {
    match state.config.authorization {
        AuthorizationMode::AlwaysAllow => Decision::Allow(String::new()),
        AuthorizationMode::Rbac if user.groups.iter().any(|g| g == SYSTEM_MASTERS) => Decision::Allow(String::new()),
        AuthorizationMode::Rbac => policy(state).await.authorize(user, attributes),
    }
}

/// Authorizes a request before it is routed: kube's 403 Status when it is refused.
pub async fn check(state: &ApiState, user: &UserInfo, attributes: &Attributes) -> Result<(), ApiError> {
    match authorize(state, user, attributes).await {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) => Err(forbidden(user, attributes, &reason)),
    }
}

/// kube's `responsewriters.Forbidden`: `<resource> "<name>" is forbidden: User "<user>"
/// cannot <verb> resource "<resource>" in API group "<group>" in the namespace "<ns>"`, or
/// `at the cluster scope`; `forbidden: User "<user>" cannot <verb> path "<path>"` for other
/// paths; the authorizer's reason after a colon when it gave one.
pub fn forbidden(user: &UserInfo, attributes: &Attributes, reason: &str) -> ApiError {
    let who = go_quote(&user.name);
    let mut message = if !attributes.resource_request {
        format!("User {who} cannot {} path {}", attributes.verb, go_quote(&attributes.path))
    } else {
        let resource = go_quote(&attributes.resource_and_subresource());
        let group = go_quote(&attributes.api_group);
        let verb = &attributes.verb;
        if attributes.namespace.is_empty() {
            format!("User {who} cannot {verb} resource {resource} in API group {group} at the cluster scope")
        } else {
            let namespace = go_quote(&attributes.namespace);
            format!("User {who} cannot {verb} resource {resource} in API group {group} in the namespace {namespace}")
        }
    };
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let resource = if attributes.resource_request {
        GroupResource::new(&attributes.api_group, &attributes.resource)
    } else {
        GroupResource::new("", "")
    };
    ApiError::forbidden(&resource, &attributes.name, &message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Query;
    use http::Method;

    fn user(name: &str) -> UserInfo {
        UserInfo { name: name.into(), ..UserInfo::default() }
    }

    fn attributes(method: Method, path: &str, query: &str) -> Attributes {
        let query = Query::parse(Some(query));
        let request = crate::request::parse(&method, path, &query);
        Attributes::of_request(&method, path, &query, request.as_ref())
    }

    #[test]
    fn kube_forbidden_messages() {
        let list = attributes(Method::GET, "/api/v1/namespaces/default/configmaps", "");
        assert_eq!(
            forbidden(&user("alice"), &list, "").status().message,
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        let get = attributes(Method::GET, "/apis/apps/v1/namespaces/ns/deployments/web/scale", "");
        assert_eq!(
            forbidden(&user("bob"), &get, "").status().message,
            r#"deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns""#
        );
        let nodes = attributes(Method::GET, "/api/v1/nodes", "watch=1");
        assert_eq!(
            forbidden(&user("bob"), &nodes, "").status().message,
            r#"nodes is forbidden: User "bob" cannot watch resource "nodes" in API group "" at the cluster scope"#
        );
        let path = attributes(Method::GET, "/metrics", "");
        let error = forbidden(&user("system:anonymous"), &path, "");
        assert_eq!(error.status().message, r#"forbidden: User "system:anonymous" cannot get path "/metrics""#);
        assert_eq!((error.code(), error.reason()), (403, "Forbidden"));
    }

    #[test]
    fn a_list_of_one_name_by_field_is_about_that_name() {
        let a = attributes(Method::GET, "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name%3Dcm&watch=1");
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "cm"));
        let a = attributes(Method::GET, "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name%21%3Dcm");
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", ""));
    }
}
