//! Query values of LIST, GET and WATCH. Values are converted first (a conversion error is a
//! 400 carrying strconv's or the selector parser's text: apimachinery `pkg/labels/selector.go`,
//! `pkg/fields/selector.go`), then ListOptions are validated (422 `ListOptions.meta.k8s.io`,
//! internalversion/validation), then storage reads the resourceVersion and continue token
//! (etcd3/store.go, storage/continue.go). Go's `url.Query()` drops pairs it cannot decode and
//! pairs with a `;`.
//!
//! kube-apiserver answers 500 when a non-numeric resourceVersion reaches the watch cache (its
//! InvalidError is not a Status); these rows expect the 400 the paging path gives.

use serde_json::json;

use super::{bad_request, cm1, cms, deployments, get, invalid_options, ns_path};
use crate::bad_input::fixtures::{Fixtures, NODE, NS, rv};
use crate::bad_input::kube::{self, max_len, query_escape};
use crate::bad_input::table::{Case, Expect, Request};

const SELECTORS: &str = "query: selectors";
const PAGING: &str = "query: limit and continue";
const VERSIONS: &str = "query: resourceVersion";
const WATCH: &str = "query: watch options";

fn list(query: &str) -> Request {
    get(format!("{}?{query}", cms()))
}

fn selector(label: &str, query: &str, message: &str) -> Case {
    Case::new(SELECTORS, label, list(query), bad_request(message))
}

fn token(json: &str) -> String {
    kube::base64(json.as_bytes(), true)
}

fn invalid_rv(value: &str, why: &str) -> String {
    format!(
        "invalid resource version: resourceVersion: Invalid value: \"{value}\": strconv.ParseUint: parsing \"{value}\": {why}"
    )
}

fn too_large(rv: &str) -> Expect {
    Expect::status(504, "Timeout")
        .msg_has(format!("Too large resource version: {rv}, current: "))
        .cause("", "ResourceVersionTooLarge")
        .header("retry-after", "1")
}

/// A list in one piece: no continue token.
fn whole_list() -> Expect {
    Expect::code(200).json_at("/kind", json!("ConfigMapList")).json_absent("/metadata/continue")
}

fn list_options(errors: &[&str]) -> Expect {
    let errors: Vec<String> = errors.iter().map(std::string::ToString::to_string).collect();
    invalid_options("ListOptions", &errors)
}

pub fn rows(fx: &Fixtures) -> Vec<Case> {
    let u64_max = u64::MAX.to_string();
    let past_i64 = (i64::MAX as u64 + 1).to_string();
    let over_u64 = "99999999999999999999";
    let x64 = "x".repeat(64);
    let valid_token = token(&format!(r#"{{"v":"meta.k8s.io/v1","rv":{},"start":"cm1\u0000"}}"#, rv(&fx.cm)));
    let watch = |query: &str| get(format!("{}?watch=true&{query}", cms()));
    vec![
        // Label selectors.
        selector("labelSelector a===b", "labelSelector=a%3D%3D%3Db", "unable to parse requirement: found '=', expected: identifier"),
        selector("labelSelector !", "labelSelector=%21", "unable to parse requirement: found '', expected: identifier"),
        selector("labelSelector a,", "labelSelector=a%2C", "found '', expected: identifier after ','"),
        selector(
            "labelSelector 'a b'",
            "labelSelector=a%20b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        selector("labelSelector a=b=c", "labelSelector=a%3Db%3Dc", "found '=', expected: ',' or 'end of string'"),
        // NewRequirement's errors carry paths relative to an empty root.
        selector(
            "labelSelector value of 64 characters",
            &format!("labelSelector=a%3D{x64}"),
            &format!("unable to parse requirement: values[0][a]: Invalid value: \"{x64}\": {}", max_len(63)),
        ),
        selector(
            "labelSelector > a word",
            "labelSelector=x%3Eabc",
            "unable to parse requirement: values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        selector("labelSelector gt spelled out", "labelSelector=x%20gt%201", "unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt"),
        Case::new(
            SELECTORS,
            "labelSelector key -a",
            list("labelSelector=-a"),
            Expect::status(400, "BadRequest")
                .msg_has("unable to parse requirement: ")
                .msg_has(format!("Invalid value: \"-a\": {}", kube::qualified_name_part())),
        ),
        Case::new(
            SELECTORS,
            "labelSelector that matches",
            list("labelSelector=app%3Dbad-input"),
            Expect::code(200).json_at("/items/0/metadata/name", json!("cm1")),
        ),
        // Field selectors.
        selector("fieldSelector without operator", "fieldSelector=foo", "invalid selector: 'foo'; can't understand 'foo'"),
        selector(
            "fieldSelector with an unescaped =",
            "fieldSelector=metadata.name%3Da%3Db",
            "invalid field selector: unescaped character in value: 61",
        ),
        selector(
            "fieldSelector with a bad escape",
            "fieldSelector=metadata.name%3Da%5Cx",
            "invalid field selector: invalid escape sequence: \\x",
        ),
        selector(
            "fieldSelector with a bare term",
            "fieldSelector=metadata.name%21%3Da%2Cb",
            "invalid selector: 'metadata.name!=a,b'; can't understand 'b'",
        ),
        Case::new(
            SELECTORS,
            "fieldSelector deployments do not have",
            get(format!("{}?fieldSelector=spec.replicas%3D1", deployments())),
            bad_request("\"spec.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""),
        ),
        Case::new(
            SELECTORS,
            "fieldSelector pods have",
            get(format!("{}?fieldSelector=spec.nodeName%3D{NODE}", ns_path("pods"))),
            Expect::code(200).json_at("/items/0/metadata/name", json!("p1")),
        ),
        Case::new(
            SELECTORS,
            "fieldSelector secrets have",
            get(format!("{}?fieldSelector=type%3DOpaque", ns_path("secrets"))),
            Expect::code(200).json_at("/items/0/metadata/name", json!("s1")),
        ),
        Case::new(
            SELECTORS,
            "legacy watch path with another name",
            get(format!("/api/v1/watch/namespaces/{NS}/configmaps/cm1?fieldSelector=metadata.name%3Dother")),
            bad_request("fieldSelector metadata.name doesn't match requested name"),
        ),
        Case::new(
            SELECTORS,
            "watch with a bad labelSelector",
            watch("labelSelector=a%20in%20%28"),
            bad_request("unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ),
        Case::new(
            SELECTORS,
            "includeObject Bogus with a Table",
            list("includeObject=Bogus").accept("application/json;as=Table;g=meta.k8s.io;v=v1"),
            bad_request(
                "Unable to convert to Table as requested: includeObject: Invalid value: \"Bogus\": must be 'Metadata', 'Object', 'None', or empty",
            ),
        ),
        // limit and continue.
        Case::new(PAGING, "limit abc", list("limit=abc"), bad_request("strconv.ParseInt: parsing \"abc\": invalid syntax")),
        Case::new(PAGING, "limit 1.5", list("limit=1.5"), bad_request("strconv.ParseInt: parsing \"1.5\": invalid syntax")),
        Case::new(
            PAGING,
            "limit beyond int64",
            list(&format!("limit={over_u64}")),
            bad_request(format!("strconv.ParseInt: parsing \"{over_u64}\": value out of range")),
        ),
                // The namespace holds more than one ConfigMap: a limit of 1 would leave a continue.
        Case::new(PAGING, "limit -1", list("limit=-1"), whole_list()),
        Case::new(PAGING, "limit %zz (dropped)", list("limit=%zz"), whole_list()),
        Case::new(PAGING, "limit=1;x=y (dropped)", list("limit=1;x=y"), whole_list()),
        Case::new(PAGING, "limit=1 pages", list("limit=1"), Expect::code(200).json_absent("/items/1")),
        Case::new(
            PAGING,
            "continue not base64",
            list("continue=%21%21%21"),
            bad_request("invalid continue token: continue key is not valid: illegal base64 data at input byte 0"),
        ),
        Case::new(
            PAGING,
            "continue nested 30,000 levels",
            list(&format!("continue={}", token(&"[".repeat(30_000)))),
            bad_request("invalid continue token: continue key is not valid: invalid character '[' exceeded max depth"),
        ),
        Case::new(
            PAGING,
            "continue not JSON",
            list(&format!("continue={}", token("not json"))),
            bad_request("invalid continue token: continue key is not valid: invalid character 'o' in literal null (expecting 'u')"),
        ),
        Case::new(
            PAGING,
            "continue with rv 0",
            list(&format!("continue={}", token(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#))),
            bad_request(
                "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ),
        ),
        Case::new(
            PAGING,
            "continue with an empty start",
            list(&format!("continue={}", token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#))),
            bad_request("invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"),
        ),
        Case::new(
            PAGING,
            "continue climbing out of the collection",
            list(&format!("continue={}", token(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#))),
            bad_request("invalid continue token: continue key is not valid: ../secrets/x"),
        ),
        Case::new(
            PAGING,
            "continue of another version",
            list(&format!("continue={}", token(r#"{"v":"v2","rv":1,"start":"a"}"#))),
            bad_request("invalid continue token: continue key is not valid: server does not recognize this encoded version v2"),
        ),
        Case::new(
            PAGING,
            "continue with a resourceVersion",
            list(&format!("continue={}&resourceVersion=5", query_escape(&valid_token))),
            bad_request("specifying resource version is not allowed when using continue"),
        ),
        Case::new(
            PAGING,
            "continue with resourceVersionMatch",
            list(&format!("continue={}&resourceVersionMatch=NotOlderThan", query_escape(&valid_token))),
            list_options(&[
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ])
            .cause("resourceVersionMatch", "FieldValueForbidden"),
        ),
        // resourceVersion.
        Case::new(VERSIONS, "LIST resourceVersion abc with limit", list("resourceVersion=abc&limit=5"), bad_request(invalid_rv("abc", "invalid syntax"))),
        Case::new(VERSIONS, "LIST resourceVersion abc", list("resourceVersion=abc"), bad_request(invalid_rv("abc", "invalid syntax"))),
        Case::new(VERSIONS, "LIST resourceVersion -1", list("resourceVersion=-1"), bad_request(invalid_rv("-1", "invalid syntax"))),
        Case::new(
            VERSIONS,
            "LIST resourceVersion beyond uint64",
            list(&format!("resourceVersion={over_u64}")),
            bad_request(invalid_rv(over_u64, "value out of range")),
        ),
        Case::new(
            VERSIONS,
            "LIST resourceVersion max uint64, NotOlderThan",
            list(&format!("resourceVersion={u64_max}&resourceVersionMatch=NotOlderThan")),
            too_large(&u64_max),
        ),
        Case::new(VERSIONS, "GET resourceVersion abc", get(format!("{}?resourceVersion=abc", cm1())), bad_request(invalid_rv("abc", "invalid syntax"))),
        Case::new(VERSIONS, "GET resourceVersion -1", get(format!("{}?resourceVersion=-1", cm1())), bad_request(invalid_rv("-1", "invalid syntax"))),
        Case::new(
            VERSIONS,
            "GET resourceVersion beyond uint64",
            get(format!("{}?resourceVersion={over_u64}", cm1())),
            bad_request(invalid_rv(over_u64, "value out of range")),
        ),
        Case::new(VERSIONS, "GET resourceVersion past int64", get(format!("{}?resourceVersion={past_i64}", cm1())), too_large(&past_i64)),
        Case::new(VERSIONS, "GET resourceVersion 0", get(format!("{}?resourceVersion=0", cm1())), Expect::code(200).json_at("/metadata/name", json!("cm1"))),
        Case::new(VERSIONS, "LIST resourceVersion empty", list("resourceVersion="), Expect::code(200).json_at("/kind", json!("ConfigMapList"))),
        Case::new(
            VERSIONS,
            "resourceVersionMatch without resourceVersion",
            list("resourceVersionMatch=Exact"),
            list_options(&["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"])
                .cause("resourceVersionMatch", "FieldValueForbidden"),
        ),
        Case::new(
            VERSIONS,
            "resourceVersionMatch Exact with resourceVersion 0",
            list("resourceVersionMatch=Exact&resourceVersion=0"),
            list_options(&["resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""]),
        ),
        Case::new(
            VERSIONS,
            "resourceVersionMatch Bogus",
            list("resourceVersionMatch=Bogus&resourceVersion=1"),
            list_options(&["resourceVersionMatch: Unsupported value: \"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\""])
                .cause("resourceVersionMatch", "FieldValueNotSupported"),
        ),
        Case::new(
            VERSIONS,
            "sendInitialEvents on a list",
            list("sendInitialEvents=true"),
            list_options(&["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"])
                .cause("sendInitialEvents", "FieldValueForbidden"),
        ),
        // Watch options.
        Case::new(
            WATCH,
            "watch with resourceVersionMatch only",
            watch("resourceVersionMatch=NotOlderThan"),
            list_options(&["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"]),
        ),
        Case::new(
            WATCH,
            "watch with sendInitialEvents only",
            watch("sendInitialEvents=true"),
            list_options(&["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]),
        ),
        Case::new(
            WATCH,
            "watch with sendInitialEvents=false only",
            watch("sendInitialEvents=false"),
            list_options(&["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]),
        ),
        Case::new(
            WATCH,
            "watch list with resourceVersionMatch Exact",
            watch("sendInitialEvents=true&resourceVersionMatch=Exact"),
            list_options(&[
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
            ]),
        ),
        Case::new(
            WATCH,
            "watch resourceVersion abc",
            watch("resourceVersion=abc"),
            Expect::status(400, "BadRequest").msg_has("Invalid value: \"abc\""),
        ),
        Case::new(WATCH, "watch resourceVersion -1", watch("resourceVersion=-1"), Expect::status(400, "BadRequest").msg_has("Invalid value: \"-1\"")),
        // A future resourceVersion is waited for.
        Case::new(WATCH, "watch resourceVersion max uint64", watch(&format!("resourceVersion={u64_max}")), Expect::stream(200)),
        Case::new(WATCH, "watch timeoutSeconds -1", watch("timeoutSeconds=-1"), Expect::stream(200)),
        Case::new(WATCH, "watch timeoutSeconds huge", watch("timeoutSeconds=9223372036854775807"), Expect::stream(200)),
        Case::new(WATCH, "watch timeoutSeconds abc", watch("timeoutSeconds=abc"), bad_request("strconv.ParseInt: parsing \"abc\": invalid syntax")),
        Case::new(
            WATCH,
            "watch timeoutSeconds beyond int64",
            watch(&format!("timeoutSeconds={over_u64}")),
            bad_request(format!("strconv.ParseInt: parsing \"{over_u64}\": value out of range")),
        ),
        Case::new(WATCH, "watch=anything is a watch", get(format!("{}?watch=yes-please", cms())), Expect::stream(200).header("content-type", "application/json")),
        // An object path with ?watch is a GET.
        Case::new(WATCH, "watch on an object path", get(format!("{}?watch=true", cm1())), Expect::code(200).json_at("/kind", json!("ConfigMap"))),
    ]
}
