//! What the user's programs ended up with, after the quiet period: the cache a program serves
//! (`cache:`, the informer-cache HTTP API client-go users write) compared with storage, and
//! its work (`expect: {resource, cel}`) as a condition over the final objects. A cache that
//! never answers, or answers something that is not a List, is reported as that, not as a
//! divergence.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use http::Method;
use listwatch_client::Client;
use listwatch_simulator::audit::record::{Scope, Verb};
use serde_json::Value;

use crate::audit::{Identities, Records};
use crate::commands::Running;
use crate::scenario::{CacheSpec, CommandSpec};

/// One check of a program's end state.
pub struct EndCheck {
    /// The program.
    pub command: String,
    /// `cache` or `work`.
    pub kind: &'static str,
    /// Whether it held.
    pub passed: bool,
    /// What was found.
    pub outcome: String,
}

/// The work conditions of every program, polled until they hold or `within` has passed.
pub async fn work(server: &Client, commands: &[CommandSpec], within: Duration) -> Vec<EndCheck> {
    let mut checks = Vec::new();
    for command in commands {
        let Some(work) = command.work() else { continue };
        let path = collection_path(&work.group, &work.version, &work.resource, work.namespace.as_deref());
        let deadline = Instant::now() + within;
        let outcome = loop {
            let outcome = match list(server, &path).await {
                Err(e) => Err(format!("listing {path}: {e:#}")),
                Ok(items) => {
                    let failing: Vec<String> = items
                        .iter()
                        .filter_map(|item| match listwatch_apiextensions::schema::cel::holds(&work.cel, item) {
                            Ok(true) => None,
                            Ok(false) => Some(key(item)),
                            Err(e) => Some(format!("{} ({e})", key(item))),
                        })
                        .collect();
                    if failing.is_empty() {
                        Ok(format!("{} holds for all {} {}", work.cel, items.len(), work.resource))
                    } else {
                        Err(format!(
                            "{} does not hold for {} of {} {}: {}",
                            work.cel,
                            failing.len(),
                            items.len(),
                            work.resource,
                            failing.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
                        ))
                    }
                }
            };
            if outcome.is_ok() || Instant::now() >= deadline {
                break outcome;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let (passed, outcome) = match outcome {
            Ok(text) => (true, text),
            Err(text) => (false, format!("work: {text} (after {within:?})")),
        };
        checks.push(EndCheck { command: command.name.clone(), kind: "work", passed, outcome });
    }
    checks
}

/// The caches of every program that serves one, each compared with a consistent LIST of what
/// it watched, polled until they agree or `within` has passed.
pub async fn caches(programs: &[Running], records: &Records, servers: &[Client], within: Duration) -> Vec<EndCheck> {
    let mut checks = Vec::new();
    for program in programs {
        let Some(spec) = &program.spec.cache else { continue };
        let url = match spec {
            CacheSpec::Url(url) => url,
            CacheSpec::Scoped(scoped) => &scoped.url,
        }
        .replace("${PORT}", &program.port.to_string());
        let scope = match spec {
            CacheSpec::Scoped(s) => Ok(Scope {
                group: s.group.clone(),
                resource: s.resource.clone(),
                namespace: s.namespace.clone(),
                label_selector: s.label_selector.clone(),
                field_selector: None,
            }),
            CacheSpec::Url(_) => watched_scope(records, servers, &program.spec.name).await,
        };
        let (passed, outcome) = match scope {
            Err(why) => (false, format!("cache: {why}")),
            Ok(scope) => compare(&url, &scope, &servers[0], within).await,
        };
        checks.push(EndCheck { command: program.spec.name.clone(), kind: "cache", passed, outcome });
    }
    checks
}

/// The one scope the program watched (the broadest, when one holds the others).
async fn watched_scope(records: &Records, servers: &[Client], name: &str) -> Result<Scope, String> {
    let user = Identities::user(name);
    let mut scopes: Vec<Scope> = records
        .all(servers)
        .await
        .into_iter()
        .filter(|r| r.client == user && r.verb == Verb::Watch)
        .map(|r| r.scope)
        .collect();
    scopes.sort();
    scopes.dedup();
    let broadest = scopes.iter().find(|outer| {
        scopes.iter().all(|inner| {
            outer.group == inner.group
                && outer.resource == inner.resource
                && (outer.namespace.is_none() || outer.namespace == inner.namespace)
                && (outer.label_selector.is_none() || outer.label_selector == inner.label_selector)
        })
    });
    match (scopes.len(), broadest) {
        (0, _) => Err("the program never watched anything, so its cache cannot be compared".into()),
        (_, Some(scope)) => Ok(scope.clone()),
        (_, None) => Err(format!(
            "the program watched {} scopes; say which one its cache holds (cache: {{url, resource, namespace, labelSelector}})",
            scopes.len()
        )),
    }
}

/// What the cache at `url` holds against a LIST of `scope`: missing, stale and old objects.
async fn compare(url: &str, scope: &Scope, server: &Client, within: Duration) -> (bool, String) {
    let path = scope_path(scope);
    let deadline = Instant::now() + within;
    loop {
        let outcome = match (fetch_list(url).await, list(server, &path).await) {
            (Err(why), _) => Err((true, why)),
            (_, Err(e)) => Err((true, format!("listing {path}: {e:#}"))),
            (Ok(cached), Ok(stored)) => {
                let differences = differences(&by_key(&cached), &by_key(&stored));
                if differences.is_empty() {
                    Ok(format!("cache: holds exactly the {} objects storage holds", stored.len()))
                } else {
                    Err((false, format!("cache: differs from storage: {}", differences.join("; "))))
                }
            }
        };
        match outcome {
            Ok(text) => return (true, text),
            Err((_, text)) if Instant::now() >= deadline => return (false, format!("{text} (after {within:?})")),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Missing (in storage only), stale (in the cache only) and old (an older resourceVersion)
/// objects, each named.
fn differences(cached: &BTreeMap<String, i64>, stored: &BTreeMap<String, i64>) -> Vec<String> {
    let name = |keys: Vec<&String>| {
        let shown: Vec<&str> = keys.iter().take(5).map(|k| k.as_str()).collect();
        let more = keys.len().saturating_sub(5);
        format!("{}{}", shown.join(", "), if more > 0 { format!(" and {more} more") } else { String::new() })
    };
    let missing: Vec<&String> = stored.keys().filter(|k| !cached.contains_key(*k)).collect();
    let stale: Vec<&String> = cached.keys().filter(|k| !stored.contains_key(*k)).collect();
    let old: Vec<&String> =
        cached.iter().filter(|(k, rv)| stored.get(*k).is_some_and(|s| *s > **rv)).map(|(k, _)| k).collect();
    let mut found = Vec::new();
    if !missing.is_empty() {
        found.push(format!("{} missing ({})", missing.len(), name(missing)));
    }
    if !stale.is_empty() {
        found.push(format!("{} stale, deleted from storage ({})", stale.len(), name(stale)));
    }
    if !old.is_empty() {
        found.push(format!("{} at an old resourceVersion ({})", old.len(), name(old)));
    }
    found
}

fn by_key(items: &[Value]) -> BTreeMap<String, i64> {
    items
        .iter()
        .map(|item| {
            let rv = item["metadata"]["resourceVersion"].as_str().and_then(|rv| rv.parse().ok()).unwrap_or(0);
            (key(item), rv)
        })
        .collect()
}

fn key(item: &Value) -> String {
    let metadata = &item["metadata"];
    match metadata["namespace"].as_str().filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{}", metadata["name"].as_str().unwrap_or("")),
        None => metadata["name"].as_str().unwrap_or("").to_string(),
    }
}

/// The items of a List the program serves at `url`: why not, if it never answered or did not
/// answer a List.
async fn fetch_list(url: &str) -> Result<Vec<Value>, String> {
    let body = match get(url).await {
        Ok((200, body)) => body,
        Ok((code, _)) => return Err(format!("cache: {url} answered {code}, not a List")),
        Err(e) => return Err(format!("cache: {url} never answered ({e})")),
    };
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("cache: {url} answered something that is not a List ({e})"))?;
    match value["items"].as_array() {
        Some(items) if items.iter().all(|i| i["metadata"]["name"].is_string()) => Ok(items.clone()),
        _ => Err(format!("cache: {url} answered JSON that is not a List (no items with metadata.name)")),
    }
}

/// A plain HTTP/1.1 GET on loopback (the program's own server): status and body.
async fn get(url: &str) -> Result<(u16, Vec<u8>), String> {
    use http_body_util::{BodyExt, Empty};
    let uri: http::Uri = url.parse().map_err(|e| format!("{url} is not a URL: {e}"))?;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let request = tokio::time::timeout(Duration::from_secs(5), client.get(uri));
    let response = request.await.map_err(|_| "no answer in 5 s".to_string())?.map_err(|e| e.to_string())?;
    let code = response.status().as_u16();
    let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((code, body.to_vec()))
}

async fn list(server: &Client, path: &str) -> anyhow::Result<Vec<Value>> {
    let (_, body) = server.request(Method::GET, path, "application/json", None).await?;
    let list: Value = serde_json::from_slice(&body)?;
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

fn collection_path(group: &str, version: &str, resource: &str, namespace: Option<&str>) -> String {
    let root = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    match namespace {
        Some(ns) => format!("{root}/namespaces/{ns}/{resource}"),
        None => format!("{root}/{resource}"),
    }
}

/// A consistent LIST of `scope` (the served version of a group: the preferred one of discovery
/// would be better; the built-ins and most CRDs serve v1).
fn scope_path(scope: &Scope) -> String {
    let mut path = collection_path(&scope.group, "v1", &scope.resource, scope.namespace.as_deref());
    if let Some(labels) = &scope.label_selector {
        path.push_str(&format!("?labelSelector={}", encode(labels)));
    }
    path
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
