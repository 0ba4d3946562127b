//! What a request is about (kube-apiserver's `RequestInfo`) and its query parameters.
//!
//! `/api/v1/namespaces/ns/pods/name/status` → group "", version v1, namespace ns, resource
//! pods, name, subresource status; the verb follows from the method, the name, and `watch`
//! (or the legacy `/watch/` segment, which turns a name into `metadata.name=<name>`).

use std::collections::HashMap;

use http::Method;

/// A request to a resource path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub verb: Verb,
    /// Came through the deprecated `/watch/` path.
    pub legacy_watch: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    /// The verb as metrics and discovery name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// The uppercase verb kube's request metrics use.
    pub fn metric_name(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Create => "POST",
            Verb::Update => "PUT",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
            Verb::DeleteCollection => "DELETE",
        }
    }
}

/// Query parameters: every value of each name, in order; `get` reads the first (as Go's
/// `url.Values.Get`), `all` all of them (a `[]string` option such as `dryRun`).
#[derive(Clone, Debug, Default)]
pub struct Query(HashMap<String, Vec<String>>);

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            map.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        Query(map)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|values| values.first()).map(String::as_str)
    }

    /// Every value of `name`, in the order the query gives them (empty when absent).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0.get(name).map(|values| values.iter().map(String::as_str).collect()).unwrap_or_default()
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// kube's query boolean: absent, "0" and "false" (any case) are false; anything else,
    /// including an empty value, is true.
    pub fn flag(&self, name: &str) -> bool {
        match self.get(name) {
            None => false,
            Some(v) => !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"),
        }
    }

    /// An optional boolean (`sendInitialEvents`): `None` when absent.
    pub fn optional_flag(&self, name: &str) -> Option<bool> {
        self.has(name).then(|| self.flag(name))
    }

    pub fn insert(&mut self, name: &str, value: String) {
        self.0.insert(name.into(), vec![value]);
    }
}

/// Namespace subresources that stay on the namespace itself (`/namespaces/x/status`).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Parses a resource path; `None` if it is not one (discovery and other paths are routed
/// before this).
pub fn parse(method: &Method, path: &str, query: &Query) -> Option<ResourceRequest> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, mut rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => (String::new(), version.to_string(), rest),
        ["apis", group, version, rest @ ..] => (group.to_string(), version.to_string(), rest),
        _ => return None,
    };
    if rest.is_empty() || rest.iter().any(|s| s.is_empty()) {
        return None;
    }
    let mut legacy_watch = false;
    if rest[0] == "watch" {
        legacy_watch = true;
        rest = &rest[1..];
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = Some(rest[1].to_string());
        if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
            rest = &rest[2..];
        }
    }
    if rest.is_empty() || rest.len() > 3 {
        return None;
    }
    let resource = rest[0].to_string();
    let name = rest.get(1).map(|s| s.to_string());
    let subresource = rest.get(2).map(|s| s.to_string());
    let verb = if legacy_watch {
        Verb::Watch
    } else {
        match *method {
            Method::GET | Method::HEAD if name.is_some() => Verb::Get,
            Method::GET | Method::HEAD if query.flag("watch") => Verb::Watch,
            Method::GET | Method::HEAD => Verb::List,
            Method::POST => Verb::Create,
            Method::PUT => Verb::Update,
            Method::PATCH => Verb::Patch,
            Method::DELETE if name.is_some() => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => return None,
        }
    };
    Some(ResourceRequest { group, version, namespace, resource, name, subresource, verb, legacy_watch })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(method: Method, path: &str, query: &str) -> ResourceRequest {
        parse(&method, path, &Query::parse(Some(query))).unwrap()
    }

    #[test]
    fn resource_paths() {
        let r = p(Method::GET, "/api/v1/namespaces/ns/pods/p/status", "");
        assert_eq!(
            (r.namespace.as_deref(), r.resource.as_str(), r.name.as_deref(), r.subresource.as_deref(), r.verb),
            (Some("ns"), "pods", Some("p"), Some("status"), Verb::Get)
        );
        let r = p(Method::GET, "/apis/apps/v1/deployments", "watch");
        assert_eq!((r.group.as_str(), r.verb), ("apps", Verb::Watch));
        let r = p(Method::GET, "/api/v1/pods", "watch=false");
        assert_eq!(r.verb, Verb::List);
        // The namespace itself.
        let r = p(Method::DELETE, "/api/v1/namespaces/foo", "");
        assert_eq!((r.resource.as_str(), r.name.as_deref(), r.verb), ("namespaces", Some("foo"), Verb::Delete));
        let r = p(Method::PUT, "/api/v1/namespaces/foo/status", "");
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.subresource.as_deref()),
            ("namespaces", Some("foo"), Some("status"))
        );
        // Legacy watch paths.
        let r = p(Method::GET, "/api/v1/watch/namespaces/ns/pods/p", "");
        assert_eq!((r.verb, r.legacy_watch, r.name.as_deref()), (Verb::Watch, true, Some("p")));
        assert!(parse(&Method::GET, "/api/v1", &Query::default()).is_none());
    }

    #[test]
    fn query_flags() {
        let q = Query::parse(Some("watch&a=0&b=False&c=yes&d="));
        assert!(q.flag("watch"));
        assert!(!q.flag("a") && !q.flag("b") && !q.flag("missing"));
        assert!(q.flag("c") && q.flag("d"));
        assert_eq!(q.optional_flag("missing"), None);
    }

    #[test]
    fn repeated_parameters() {
        let q = Query::parse(Some("dryRun=All&x=1&dryRun=Bogus"));
        assert_eq!(q.get("dryRun"), Some("All"));
        assert_eq!(q.all("dryRun"), ["All", "Bogus"]);
        assert!(q.all("missing").is_empty());
    }
}
