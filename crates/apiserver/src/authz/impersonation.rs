//! Impersonation (kube's `WithImpersonation` filter): `Impersonate-User`, `Impersonate-Group`,
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` make the request act as someone else, once
//! the requester is allowed the `impersonate` verb on each thing asked for: `users`, `groups`,
//! `serviceaccounts` (a `system:serviceaccount:<ns>:<name>` user), and `uids` and
//! `userextras/<key>` in `authentication.k8s.io`. What `kubectl --as` and `--as-group` send.

use http::HeaderMap;
use listwatch_meta::ApiError;

use super::Attributes;
use crate::authn::service_account::split_username;
use crate::authn::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo};
use crate::state::ApiState;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One thing the requester asks to act as.
#[derive(Debug)]
enum Asked {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Uid(String),
    Extra { key: String, value: String },
}

impl Asked {
    /// The `impersonate` check kube makes for it.
    fn attributes(&self) -> Attributes {
        let (group, resource, subresource, namespace, name) = match self {
            Asked::User(name) => ("", "users", "", "", name.as_str()),
            Asked::ServiceAccount { namespace, name } => ("", "serviceaccounts", "", namespace.as_str(), name.as_str()),
            Asked::Group(name) => ("", "groups", "", "", name.as_str()),
            Asked::Uid(uid) => ("authentication.k8s.io", "uids", "", "", uid.as_str()),
            Asked::Extra { key, value } => ("authentication.k8s.io", "userextras", key.as_str(), "", value.as_str()),
        };
        Attributes {
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }
}

/// The user the request acts as: `requester` when it asks for no one else, the impersonated
/// user when it may impersonate every part asked for, else kube's 403 (400 when groups,
/// a uid or extras come without a user).
pub async fn resolve(state: &ApiState, requester: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let asked = asked_for(headers)?;
    if asked.is_empty() {
        return Ok(requester);
    }
    let groups_given = headers.contains_key(GROUP);
    let mut user = UserInfo::default();
    for part in &asked {
        let attributes = part.attributes();
        let decision = super::authorize(state, &requester, &attributes).await;
        if !decision.is_allowed() {
            return Err(super::forbidden(&requester, &attributes, decision.reason()));
        }
        match part {
            Asked::User(name) => user.name = name.clone(),
            Asked::ServiceAccount { namespace, name } => {
                user.name = format!("system:serviceaccount:{namespace}:{name}");
                if !groups_given {
                    user.groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")];
                }
            }
            Asked::Group(group) => user.groups.push(group.clone()),
            Asked::Uid(uid) => user.uid = uid.clone(),
            Asked::Extra { key, value } => user.extra.entry(key.clone()).or_default().push(value.clone()),
        }
    }
    // kube: a non-anonymous user is authenticated unless a catch-all group was asked for.
    if user.name != ANONYMOUS && !user.groups.iter().any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_AUTHENTICATED.into());
    }
    Ok(user)
}

/// What the headers ask for, in kube's order: the user, the groups, the extras, the uid.
fn asked_for(headers: &HeaderMap) -> Result<Vec<Asked>, ApiError> {
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut asked = Vec::new();
    let user = headers.get(USER).map(text).filter(|u| !u.is_empty());
    if let Some(user) = &user {
        asked.push(match split_username(user) {
            Some((namespace, name)) => Asked::ServiceAccount { namespace, name },
            None => Asked::User(user.clone()),
        });
    }
    let mut others = false;
    for group in headers.get_all(GROUP) {
        others = true;
        asked.push(Asked::Group(text(group)));
    }
    let mut extras: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            others = true;
            // kube unescapes the key (extra keys may hold characters headers cannot).
            let key = percent_decode(key).to_lowercase();
            extras.push((key, text(value)));
        }
    }
    extras.sort_by(|a, b| a.0.cmp(&b.0));
    asked.extend(extras.into_iter().map(|(key, value)| Asked::Extra { key, value }));
    if let Some(uid) = headers.get(UID).map(text).filter(|u| !u.is_empty()) {
        others = true;
        asked.push(Asked::Uid(uid));
    }
    if others && user.is_none() {
        let shown: Vec<String> = asked.iter().map(describe).collect();
        return Err(ApiError::bad_request(format!("requested [{}] without impersonating a user", shown.join(" "))));
    }
    Ok(asked)
}

/// Go's `%v` of the `ObjectReference` kube builds for an impersonation request, roughly: the
/// kind and name (kube prints the whole struct; the point is which part was asked for).
fn describe(asked: &Asked) -> String {
    match asked {
        Asked::User(name) => format!("{{User  {name}}}"),
        Asked::ServiceAccount { namespace, name } => format!("{{ServiceAccount {namespace} {name}}}"),
        Asked::Group(name) => format!("{{Group  {name}}}"),
        Asked::Uid(uid) => format!("{{UID  {uid}}}"),
        Asked::Extra { key, value } => format!("{{UserExtra  {value} {key}}}"),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%').then(|| bytes.get(i + 1..i + 3)).flatten();
        match hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()) {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_users_split_as_kube_splits_them() {
        assert_eq!(split_username("system:serviceaccount:ns:sa"), Some(("ns".into(), "sa".into())));
        assert_eq!(split_username("system:serviceaccount:ns"), None);
        assert_eq!(split_username("system:serviceaccount:ns:a:b"), None);
        assert_eq!(split_username("alice"), None);
    }

    #[test]
    fn groups_without_a_user_are_a_bad_request() {
        let mut headers = HeaderMap::new();
        headers.insert(GROUP, "devs".parse().unwrap());
        let error = asked_for(&headers).unwrap_err();
        assert_eq!((error.code(), error.reason()), (400, "BadRequest"));
        assert!(error.status().message.ends_with("without impersonating a user"), "{}", error.status().message);
    }

    #[test]
    fn extras_are_unescaped_and_lowercased() {
        let mut headers = HeaderMap::new();
        headers.insert(USER, "bob".parse().unwrap());
        headers.insert("impersonate-extra-example.com%2fscopes", "read".parse().unwrap());
        let asked = asked_for(&headers).unwrap();
        assert!(matches!(&asked[1], Asked::Extra { key, value } if key == "example.com/scopes" && value == "read"));
    }
}
