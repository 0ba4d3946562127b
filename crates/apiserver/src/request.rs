//! What a request is about (kube-apiserver's `RequestInfo`) and its query parameters.
//!
//! `/api/v1/namespaces/ns/pods/name/status` → group "", version v1, namespace ns, resource
//! pods, name, subresource status; the verb follows from the method, the name, and `watch`
//! (or the legacy `/watch/` segment, which turns a name into `metadata.name=<name>`).

use std::collections::HashMap;

use http::{HeaderMap, Method, Version, header};
use listwatch_meta::ApiError;

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
    /// Parses a raw query as Go's `url.ParseQuery` does (what `req.URL.Query()` gives kube):
    /// pairs split on `&`, `+` is a space, a pair holding a `;` or a malformed `%` escape is
    /// dropped.
    pub fn parse(query: Option<&str>) -> Query {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for pair in query.unwrap_or("").split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Some(key), Some(value)) = (query_unescape(key), query_unescape(value)) else { continue };
            map.entry(key).or_default().push(value);
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
            // kube's Convert_Slice_string_To_bool: "0", and f, false, n, no in any case, are
            // false; anything else (True, yes, even empty) is true.
            Some(v) => !matches!(v.to_ascii_lowercase().as_str(), "0" | "f" | "false" | "n" | "no"),
        }
    }

    /// An optional boolean (`sendInitialEvents`): `None` when absent.
    pub fn optional_flag(&self, name: &str) -> Option<bool> {
        self.has(name).then(|| self.flag(name))
    }
}

/// Go's `url.QueryUnescape`: `%XX` escapes and `+` for a space; `None` for a `%` not followed
/// by two hex digits. Bytes that are not UTF-8 become U+FFFD.
fn query_unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A request Go's net/http server refuses before any handler runs: it writes
/// `HTTP/1.1 <code> <reason>`, `Content-Type: text/plain; charset=utf-8`, `Connection: close`
/// and this body, then closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: u16,
    pub reason: &'static str,
    pub body: &'static str,
}

impl Refusal {
    /// Go's `badRequestError(text)`: `400 Bad Request: <text>` on the status line and as body.
    const fn bad_request(reason: &'static str, body: &'static str) -> Refusal {
        Refusal { code: 400, reason, body }
    }

    /// What Go answers a request line it cannot parse (a malformed `%` escape in the path).
    pub const MALFORMED_URL: Refusal = Refusal { code: 400, reason: "Bad Request", body: "400 Bad Request" };
}

/// Go's `readRequest` checks of the Host header and the transfer coding (HTTP/1.1 only; an
/// HTTP/2 request carries `:authority` instead, and Go ignores both for HTTP/1.0).
///
/// hyper itself answers 400 to some of what Go answers 501 (a `Transfer-Encoding` whose last
/// coding is not `chunked`) before this runs; what reaches here is a chunked body announced
/// with other codings too (`gzip, chunked`) or in several header lines.
pub fn check_framing(version: Version, headers: &HeaderMap) -> Result<(), Refusal> {
    if version != Version::HTTP_11 {
        return Ok(());
    }
    let hosts: Vec<_> = headers.get_all(header::HOST).iter().collect();
    match hosts.as_slice() {
        [] => {
            return Err(Refusal::bad_request(
                "Bad Request: missing required Host header",
                "400 Bad Request: missing required Host header",
            ));
        }
        [host] if !host.as_bytes().iter().all(|b| valid_host_byte(*b)) => {
            return Err(Refusal::bad_request(
                "Bad Request: malformed Host header",
                "400 Bad Request: malformed Host header",
            ));
        }
        [_] => {}
        _ => {
            return Err(Refusal::bad_request(
                "Bad Request: too many Host headers",
                "400 Bad Request: too many Host headers",
            ));
        }
    }
    // Like nginx, Go takes exactly one Transfer-Encoding value, "chunked".
    let codings: Vec<_> = headers.get_all(header::TRANSFER_ENCODING).iter().collect();
    match codings.as_slice() {
        [] => Ok(()),
        [coding] if coding.as_bytes().eq_ignore_ascii_case(b"chunked") => Ok(()),
        _ => Err(Refusal { code: 501, reason: "Not Implemented", body: "Unsupported transfer encoding" }),
    }
}

/// Go's `httpguts.ValidHostHeader`: the bytes of a host, a port, an IPv6 literal or a zone.
fn valid_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!$%&'()*+,-.:;=[]_~".contains(&b)
}

/// The path as Go's `url.URL.Path` has it: percent-escapes decoded (`%2F` too, so it splits
/// segments as kube's request info and go-restful's router do); `None` for a malformed escape,
/// which Go refuses with a plain 400.
pub fn decode_path(raw: &str) -> Option<String> {
    if !raw.contains('%') {
        return Some(raw.to_string());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let text = std::str::from_utf8(hex).ok()?;
            if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(text, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// kube's check of a name from the URL before it becomes a storage key
/// (`path.IsValidPathSegmentName` in the registry's key functions): 400 for `.`, `..`, or a
/// name holding `%` (a `/` cannot survive the path split).
pub fn check_path_name(name: &str) -> Result<(), ApiError> {
    let problems: Vec<String> = if name == "." || name == ".." {
        vec![format!("may not be '{name}'")]
    } else {
        ["/", "%"].iter().filter(|c| name.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
    };
    if problems.is_empty() {
        return Ok(());
    }
    Err(ApiError::bad_request(format!("Name parameter invalid: {name:?}: {}", problems.join(";"))))
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
            // Namespaces are not namespaced: no route lists them under a namespace.
            if rest[0] == "namespaces" {
                return None;
            }
        }
    }
    if rest.is_empty() || rest.len() > 3 {
        return None;
    }
    let resource = rest[0].to_string();
    let name = rest.get(1).map(std::string::ToString::to_string);
    let subresource = rest.get(2).map(std::string::ToString::to_string);
    // go-restful matches the method exactly: HEAD, OPTIONS and the rest have no route (the
    // caller answers 405 where the path has one for another method).
    let verb = if legacy_watch {
        if *method != Method::GET {
            return None;
        }
        Verb::Watch
    } else {
        match *method {
            Method::GET if name.is_some() => Verb::Get,
            Method::GET if query.flag("watch") => Verb::Watch,
            Method::GET => Verb::List,
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
    fn only_rest_methods_are_verbs() {
        for method in [Method::HEAD, Method::OPTIONS, Method::TRACE, Method::from_bytes(b"FROB").unwrap()] {
            assert!(parse(&method, "/api/v1/pods", &Query::default()).is_none(), "{method}");
        }
        assert!(parse(&Method::DELETE, "/api/v1/watch/pods", &Query::default()).is_none());
    }

    #[test]
    fn paths_decode_as_go_decodes_them() {
        assert_eq!(
            decode_path("/api/v1/namespaces/default/configmaps/cm%30").unwrap(),
            "/api/v1/namespaces/default/configmaps/cm0"
        );
        assert_eq!(decode_path("/a%2Fb%2fc").unwrap(), "/a/b/c");
        assert_eq!(decode_path("/a%252F").unwrap(), "/a%2F");
        assert_eq!(decode_path("/a%zz"), None);
        assert_eq!(decode_path("/a%2"), None);
        assert_eq!(decode_path("/a%"), None);
    }

    #[test]
    fn names_from_paths() {
        assert!(check_path_name("a.b").is_ok());
        let message = |name: &str| check_path_name(name).unwrap_err().status().message.clone();
        assert_eq!(message(".."), "Name parameter invalid: \"..\": may not be '..'");
        assert_eq!(message("."), "Name parameter invalid: \".\": may not be '.'");
        assert_eq!(message("a%b"), "Name parameter invalid: \"a%b\": may not contain '%'");
    }

    #[test]
    fn framing_as_go_reads_it() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
            }
            h
        };
        let ok = headers(&[("host", "localhost:8080")]);
        assert_eq!(check_framing(Version::HTTP_11, &ok), Ok(()));
        assert_eq!(check_framing(Version::HTTP_10, &HeaderMap::new()), Ok(()));
        assert_eq!(check_framing(Version::HTTP_2, &HeaderMap::new()), Ok(()));
        let refused = |h: &HeaderMap| check_framing(Version::HTTP_11, h).unwrap_err();
        assert_eq!(refused(&HeaderMap::new()).body, "400 Bad Request: missing required Host header");
        assert_eq!(refused(&headers(&[("host", "a"), ("host", "b")])).body, "400 Bad Request: too many Host headers");
        assert_eq!(refused(&headers(&[("host", "a b")])).body, "400 Bad Request: malformed Host header");
        let te = |v: &[&str]| {
            let mut h = ok.clone();
            for v in v {
                h.append(header::TRANSFER_ENCODING, v.parse().unwrap());
            }
            check_framing(Version::HTTP_11, &h)
        };
        assert_eq!(te(&["Chunked"]), Ok(()));
        assert_eq!(te(&["gzip, chunked"]).unwrap_err().code, 501);
        assert_eq!(te(&["chunked", "chunked"]).unwrap_err().body, "Unsupported transfer encoding");
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
    fn query_is_read_as_gos_parse_query() {
        let q = Query::parse(Some("limit=%zz&a=1;b=2&c=x+y%2B&c=second&%41=z&&e"));
        // A malformed escape or a `;` drops the pair; `+` is a space; `get` reads the first.
        assert!(!q.has("limit") && !q.has("a") && !q.has("b"));
        assert_eq!(q.get("c"), Some("x y+"));
        assert_eq!(q.all("c"), ["x y+", "second"]);
        assert_eq!(q.get("A"), Some("z"));
        assert_eq!(q.get("e"), Some(""));
    }

    #[test]
    fn repeated_parameters() {
        let q = Query::parse(Some("dryRun=All&x=1&dryRun=Bogus"));
        assert_eq!(q.get("dryRun"), Some("All"));
        assert_eq!(q.all("dryRun"), ["All", "Bogus"]);
        assert!(q.all("missing").is_empty());
    }
}
