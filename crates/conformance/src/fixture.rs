//! The objects checks work on: objects of the target's resource (ConfigMaps, or the suite's
//! custom resource: see `resource.rs`) in the run's namespace. A [`Fixture`] belongs to one
//! check: its objects are named `<check>-<suffix>` and labelled
//! `listwatch-conformance/check=<check>`, and its watches select on that label, so concurrent
//! checks never see each other's events. Writes return the object the server stored, whose
//! `metadata.resourceVersion` is the write's revision.

use reqwest::Method;
use serde_json::{Value, json};

use crate::http::ApiResponse;
use crate::watch::{EVENT_TIMEOUT, WatchEvent, WatchStream};
use crate::{CheckFailure, Target};

/// The label that ties an object to the check that made it.
pub const CHECK_LABEL: &str = "listwatch-conformance/check";

/// Creates the run's namespace.
pub async fn create_namespace(target: &Target) -> Result<(), CheckFailure> {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": target.namespace}});
    let response = target.send(Method::POST, "/api/v1/namespaces", Some(&body)).await?;
    if !matches!(response.status, 200 | 201) {
        return Err(CheckFailure::failed_with("creating the namespace", response.describe()));
    }
    Ok(())
}

/// Deletes the run's objects and namespace.
pub async fn delete_namespace(target: &Target) -> Result<(), CheckFailure> {
    let objects = target.send(Method::DELETE, &target.collection(), None).await?;
    if !matches!(objects.status, 200 | 202) {
        return Err(CheckFailure::failed_with(
            format!("deleting the test {}", target.resource.qualified()),
            objects.describe(),
        ));
    }
    let path = format!("/api/v1/namespaces/{}", target.namespace);
    let response = target.send(Method::DELETE, &path, None).await?;
    if !matches!(response.status, 200 | 202) {
        return Err(CheckFailure::failed_with("deleting the namespace", response.describe()));
    }
    Ok(())
}

/// One check's view of the namespace.
pub struct Fixture<'a> {
    pub target: &'a Target,
    pub check: &'static str,
}

impl<'a> Fixture<'a> {
    pub fn new(target: &'a Target, check: &'static str) -> Fixture<'a> {
        Fixture { target, check }
    }

    /// The name of this check's object `suffix`.
    pub fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.check)
    }

    /// The label selector that picks exactly this check's objects.
    pub fn selector(&self) -> String {
        format!("{CHECK_LABEL}={}", self.check)
    }

    /// The collection path with `query` appended (`query` without the `?`).
    pub fn collection(&self, query: &str) -> String {
        let base = self.target.collection();
        if query.is_empty() { base } else { format!("{base}?{query}") }
    }

    /// A watch of this check's objects: `query` plus `watch=1` and the check's selector.
    pub fn watch_query(&self, query: &str) -> String {
        let selector = format!("labelSelector={}", encode(&self.selector()));
        if query.is_empty() {
            self.collection(&format!("watch=1&{selector}"))
        } else {
            self.collection(&format!("watch=1&{selector}&{query}"))
        }
    }

    /// Starts a watch of this check's objects (see [`Fixture::watch_query`]).
    pub async fn watch(&self, query: &str) -> Result<WatchStream, CheckFailure> {
        self.target.watch(&self.watch_query(query)).await
    }

    /// Starts a watch of this check's objects that also match the label selector `extra`.
    pub async fn watch_selecting(&self, extra: &str, query: &str) -> Result<WatchStream, CheckFailure> {
        let selector = encode(&format!("{},{extra}", self.selector()));
        let mut path = self.collection(&format!("watch=1&labelSelector={selector}"));
        if !query.is_empty() {
            path = format!("{path}&{query}");
        }
        self.target.watch(&path).await
    }

    /// Creates object `suffix` with `data.value` and, beside the check label, `labels`.
    pub async fn create_labelled(
        &self,
        suffix: &str,
        labels: &[(&str, &str)],
        data: &str,
    ) -> Result<Value, CheckFailure> {
        let mut label_map = serde_json::Map::new();
        label_map.insert(CHECK_LABEL.into(), Value::from(self.check));
        for (k, v) in labels {
            label_map.insert((*k).into(), Value::from(*v));
        }
        let body = self.target.resource.object(
            &self.name(suffix),
            Some(&self.target.namespace),
            label_map,
            json!({"value": data}),
        );
        let response = self.target.send(Method::POST, &self.target.collection(), Some(&body)).await?;
        let object = response.expect(201)?;
        rv_of(&object, &response)?;
        Ok(object)
    }

    pub async fn create(&self, suffix: &str, data: &str) -> Result<Value, CheckFailure> {
        self.create_labelled(suffix, &[], data).await
    }

    /// PUTs `object` (as read or as returned by the last write) and returns the stored object.
    pub async fn put(&self, object: &Value) -> Result<ApiResponse, CheckFailure> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let path = format!("{}/{name}", self.target.collection());
        self.target.send(Method::PUT, &path, Some(object)).await
    }

    /// Sets `data.value` on the latest `object` and returns the stored object.
    pub async fn update(&self, object: &Value, data: &str) -> Result<Value, CheckFailure> {
        let mut changed = object.clone();
        changed["data"] = json!({"value": data});
        self.replace(&changed).await
    }

    /// Replaces the labels (beside the check label) of the latest `object`.
    pub async fn relabel(&self, object: &Value, labels: &[(&str, &str)]) -> Result<Value, CheckFailure> {
        let mut changed = object.clone();
        let mut label_map = serde_json::Map::new();
        label_map.insert(CHECK_LABEL.into(), Value::from(self.check));
        for (k, v) in labels {
            label_map.insert((*k).into(), Value::from(*v));
        }
        changed["metadata"]["labels"] = Value::Object(label_map);
        self.replace(&changed).await
    }

    async fn replace(&self, object: &Value) -> Result<Value, CheckFailure> {
        let response = self.put(object).await?;
        let stored = response.expect(200)?;
        let before = rv_of(object, &response)?;
        let after = rv_of(&stored, &response)?;
        if after <= before {
            return Err(CheckFailure::failed_with(
                format!("an update changed the data but its resourceVersion went from {before} to {after}"),
                response.describe(),
            ));
        }
        Ok(stored)
    }

    /// Deletes this check's object `name` (a full name).
    pub async fn delete(&self, name: &str) -> Result<(), CheckFailure> {
        let path = format!("{}/{name}", self.target.collection());
        let response = self.target.send(Method::DELETE, &path, None).await?;
        if !matches!(response.status, 200 | 202) {
            return Err(CheckFailure::failed_with(format!("deleting {name}"), response.describe()));
        }
        Ok(())
    }

    /// LISTs this check's objects (plus `query`) and returns the list.
    pub async fn list(&self, query: &str) -> Result<Value, CheckFailure> {
        let selector = format!("labelSelector={}", encode(&self.selector()));
        let query = if query.is_empty() { selector } else { format!("{selector}&{query}") };
        let response = self.target.get(&self.collection(&query)).await?;
        response.expect(200)
    }

    /// The resourceVersion of a fresh (consistent) list of this check's objects: a point that
    /// every write made so far is at or before.
    pub async fn current_rv(&self) -> Result<i64, CheckFailure> {
        let list = self.list("").await?;
        list["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
            CheckFailure::failed_with("a list has no numeric metadata.resourceVersion", list.to_string())
        })
    }

    /// Waits until a cache serving `resourceVersion=0` has seen revision `rv` (a
    /// not-older-than list waits for it), so "any" reads include this check's writes.
    pub async fn wait_for_rv(&self, rv: i64) -> Result<(), CheckFailure> {
        self.list(&format!("resourceVersion={rv}")).await.map(|_| ())
    }

    /// Creates the sentinel object `suffix` (with `labels`, so that it matches the watch's
    /// selector) and reads `watch` until its ADDED: the events before it are returned. Since a
    /// watch delivers in revision order, these are all the events the watch has for the writes
    /// made before the sentinel, with no quiet-period guessing.
    pub async fn until_sentinel(
        &self,
        watch: &mut WatchStream,
        suffix: &str,
        labels: &[(&str, &str)],
    ) -> Result<Vec<WatchEvent>, CheckFailure> {
        let sentinel = self.create_labelled(suffix, labels, "sentinel").await?;
        read_until_added(watch, &sentinel).await
    }
}

/// Reads `watch` until the ADDED of `object` (at its resourceVersion), within
/// [`EVENT_TIMEOUT`] in all, and returns the events before it.
pub async fn read_until_added(watch: &mut WatchStream, object: &Value) -> Result<Vec<WatchEvent>, CheckFailure> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let object_rv = rv(object);
    let mut before = Vec::new();
    let deadline = std::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let event = watch.next_event(left).await?;
        if event.name() == name && event.kind == "ADDED" {
            if event.rv() != object_rv {
                return Err(watch.failure(&format!(
                    "{name} was created at resourceVersion {object_rv} but its ADDED says {}",
                    event.rv()
                )));
            }
            return Ok(before);
        }
        before.push(event);
    }
}

/// The numeric `metadata.resourceVersion` of an object (0 if missing).
pub fn rv(object: &Value) -> i64 {
    object["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn rv_of(object: &Value, response: &ApiResponse) -> Result<i64, CheckFailure> {
    match rv(object) {
        0 => Err(CheckFailure::failed_with(
            "a written object has no numeric metadata.resourceVersion",
            response.describe(),
        )),
        n => Ok(n),
    }
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
