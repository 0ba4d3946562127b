//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`): a custom resource is stored
//! in its storage version, and the store of each served version reads and writes through a
//! [`ConvertingStorage`] (the storage version's too, for objects stored under an earlier
//! one), which has the CRD's webhook convert every value on its way
//! out (storage version → served version: reads, watch events, the current state a conflict
//! carries) and on its way in (served version → storage version: creates and updates).
//!
//! Why here, below the watch cache: kube converts where it decodes what etcd holds, so each
//! version's watch cache holds objects of its version, converted once per change, not once
//! per watcher. A conversion that fails is a storage error: a read answers kube's 500
//! (`conversion webhook for <group>/<version>, Kind=<kind> failed: ...`), a write stores
//! nothing, and a watch cache whose storage watch fails relists, with backoff, until the
//! webhook answers again, as kube's reflector does.
//!
//! Each call is one ConversionReview (`apiextensions.k8s.io/v1`, or `v1beta1` when that is
//! the first version the CRD lists) of every value that is not already in the desired
//! version; the answer is checked as kube checks it (uid, `result.status`, count, version and
//! kind, name, namespace and uid kept) and only labels and annotations may change in metadata.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use listwatch_storage::{
    BackendVersion, DeleteResponse, Event, KeyValue, RangeRequest, RangeResponse, Revision, Storage, StorageError,
    Watch, WatchRequest, WatchResponse, WatchStream, WriteResponse,
};
use serde_json::{Map, Value, json};

use crate::webhook_client::{self, ClientConfig, ServiceUrl};

/// kube's conversion webhook client gives up after 30 s.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One CRD version's converter: its webhook, and the two apiVersions it converts between.
pub struct Converter {
    client: ClientConfig,
    /// `v1` or `v1beta1`: the ConversionReview version spoken.
    review_version: &'static str,
    services: Vec<ServiceUrl>,
    /// `group/version` of the served version and of the storage version.
    served: String,
    stored: String,
    kind: String,
}

impl Converter {
    /// The converter of a CRD version served as `served` and stored as `stored`, or why the
    /// CRD's webhook cannot be used (it has none, or speaks no review version kube knows).
    pub fn new(
        crd: &listwatch_apiextensions::CustomResourceDefinition,
        served: String,
        stored: String,
        kind: String,
        services: Vec<ServiceUrl>,
    ) -> Result<Converter, String> {
        let webhook = crd.spec.conversion.as_ref().and_then(|c| c.webhook.as_ref()).ok_or("no conversion webhook")?;
        let client: ClientConfig = serde_json::to_value(&webhook.client_config)
            .and_then(serde_json::from_value)
            .map_err(|e| format!("the conversion webhook's clientConfig: {e}"))?;
        let review_version = webhook
            .conversion_review_versions
            .iter()
            .find_map(|v| match v.as_str() {
                "v1" => Some("v1"),
                "v1beta1" => Some("v1beta1"),
                _ => None,
            })
            .ok_or("no supported conversion review versions")?;
        Ok(Converter { client, review_version, services, served, stored, kind })
    }

    /// The values in `desired` (`group/version`): those already in it as they are, the others
    /// converted by one ConversionReview.
    async fn convert(&self, values: &[Bytes], desired: &str) -> Result<Vec<Bytes>, String> {
        let mut parsed = Vec::with_capacity(values.len());
        for value in values {
            let object: Map<String, Value> = serde_json::from_slice(value).map_err(|e| e.to_string())?;
            parsed.push(object);
        }
        let pending: Vec<usize> = (0..parsed.len()).filter(|&i| api_version(&parsed[i]) != desired).collect();
        if pending.is_empty() {
            return Ok(values.to_vec());
        }
        let from = api_version(&parsed[pending[0]]).to_string();
        let failed = |why: String| format!("conversion webhook for {from}, Kind={} failed: {why}", self.kind);
        let uid = uuid::Uuid::new_v4().to_string();
        let objects: Vec<&Map<String, Value>> = pending.iter().map(|&i| &parsed[i]).collect();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{}", self.review_version),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let body = serde_json::to_vec(&review).expect("JSON values encode");
        let reply = webhook_client::post(&self.client, TIMEOUT, &self.services, body, None).await.map_err(failed)?;
        let converted = self.verify(&uid, &reply).map_err(failed)?;
        if converted.len() != pending.len() {
            return Err(format!(
                "conversion webhook for {from}, Kind={} returned {} objects, expected {}",
                self.kind,
                converted.len(),
                pending.len()
            ));
        }
        for (index, (&i, mut object)) in pending.iter().zip(converted).enumerate() {
            let invalid = |why: String| {
                format!(
                    "conversion webhook for {from}, Kind={} returned invalid converted object at index {index}: {why}",
                    self.kind
                )
            };
            let original = &parsed[i];
            let got = api_version(&object).to_string();
            if got != desired {
                return Err(invalid(format!("invalid groupVersion (expected {desired}, received {got})")));
            }
            let (kind, expected) = (text(&object, "kind"), text(original, "kind"));
            if kind != expected {
                return Err(invalid(format!("invalid kind (expected {expected}, received {kind})")));
            }
            for field in ["name", "namespace", "uid"] {
                let (was, is) = (meta_text(original, field), meta_text(&object, field));
                if was != is {
                    return Err(invalid(format!("must have the same {field}: {was} != {is}")));
                }
            }
            restore_metadata(original, &mut object).map_err(|why| {
                format!("conversion webhook for {from}, Kind={} returned invalid metadata in object at index {index}: {why}", self.kind)
            })?;
            parsed[i] = object;
        }
        Ok(parsed.iter().map(|o| Bytes::from(serde_json::to_vec(o).expect("JSON values encode"))).collect())
    }

    /// kube's `getConvertedObjectsFromResponse`.
    fn verify(&self, uid: &str, reply: &[u8]) -> Result<Vec<Map<String, Value>>, String> {
        let review: Value = serde_json::from_slice(reply).map_err(|e| e.to_string())?;
        if self.review_version == "v1" {
            let (api_version, kind) = (review["apiVersion"].as_str(), review["kind"].as_str());
            if api_version != Some("apiextensions.k8s.io/v1") || kind != Some("ConversionReview") {
                let group_version = api_version.unwrap_or_default();
                return Err(format!(
                    "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}, Kind={}",
                    if group_version.is_empty() { "/" } else { group_version },
                    kind.unwrap_or_default()
                ));
            }
        }
        let response = review.get("response").filter(|r| r.is_object()).ok_or("no response provided")?;
        if self.review_version == "v1" {
            let got = response["uid"].as_str().unwrap_or_default();
            if got != uid {
                return Err(format!("expected response.uid={}, got {}", go_quote(uid), go_quote(got)));
            }
        }
        let status = response["result"]["status"].as_str().unwrap_or_default();
        if status != "Success" {
            let message = response["result"]["message"].as_str().unwrap_or_default();
            return Err(if message.is_empty() {
                format!("response.result.status was '{status}', not 'Success'")
            } else {
                message.to_string()
            });
        }
        let objects = response["convertedObjects"].as_array().cloned().unwrap_or_default();
        objects
            .into_iter()
            .map(|o| match o {
                Value::Object(map) => Ok(map),
                other => Err(format!("converted object is not an object: {other}")),
            })
            .collect()
    }

    /// Every key-value's value in the served version.
    async fn to_served(&self, kvs: &mut [KeyValue]) -> Result<(), StorageError> {
        let values: Vec<Bytes> = kvs.iter().map(|kv| kv.value.clone()).collect();
        let converted = self.convert(&values, &self.served).await.map_err(StorageError::Transform)?;
        for (kv, value) in kvs.iter_mut().zip(converted) {
            kv.value = value;
        }
        Ok(())
    }

    /// A value about to be written, in the storage version.
    async fn to_stored(&self, value: Bytes) -> Result<Bytes, StorageError> {
        let converted =
            self.convert(std::slice::from_ref(&value), &self.stored).await.map_err(StorageError::Transform)?;
        Ok(converted.into_iter().next().unwrap_or(value))
    }

    /// A storage error whose current state (a conflict's) is in the served version.
    async fn served_error(&self, error: StorageError) -> StorageError {
        match error {
            StorageError::Conflict { current: Some(mut kv) } => {
                match self.to_served(std::slice::from_mut(&mut kv)).await {
                    Ok(()) => StorageError::Conflict { current: Some(kv) },
                    Err(e) => e,
                }
            }
            other => other,
        }
    }
}

/// kube's `restoreObjectMeta`: the original metadata, with the converted labels and
/// annotations (string values only).
fn restore_metadata(original: &Map<String, Value>, converted: &mut Map<String, Value>) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(format!("invalid metadata of type {} in converted object", go_type(other))),
    };
    let mut metadata = original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.shift_remove(field);
            }
            Some(Value::Object(values)) => {
                if let Some((key, value)) = values.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{key}] must be a string, but is {} in converted object",
                        go_type(value)
                    ));
                }
                metadata.insert(field.into(), Value::Object(values.clone()));
            }
            Some(other) => {
                return Err(format!("invalid metadata.{field} of type {} in converted object", go_type(other)));
            }
        }
    }
    converted.insert("metadata".into(), Value::Object(metadata));
    Ok(())
}

fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn go_quote(text: &str) -> String {
    listwatch_meta::validation::go_quote(text)
}

fn api_version(object: &Map<String, Value>) -> &str {
    text(object, "apiVersion")
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn meta_text<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get("metadata").and_then(|m| m.get(key)).and_then(Value::as_str).unwrap_or_default()
}

/// The storage of one served version of a CRD converted by webhook (see the module docs).
pub struct ConvertingStorage {
    inner: Arc<dyn Storage>,
    converter: Arc<Converter>,
}

impl ConvertingStorage {
    pub fn new(inner: Arc<dyn Storage>, converter: Converter) -> ConvertingStorage {
        ConvertingStorage { inner, converter: Arc::new(converter) }
    }
}

#[async_trait]
impl Storage for ConvertingStorage {
    async fn range(&self, request: RangeRequest) -> listwatch_storage::Result<RangeResponse> {
        let mut response = self.inner.range(request).await?;
        self.converter.to_served(&mut response.kvs).await?;
        Ok(response)
    }

    async fn create(&self, key: &[u8], value: Bytes) -> listwatch_storage::Result<WriteResponse> {
        let value = self.converter.to_stored(value).await?;
        match self.inner.create(key, value).await {
            Ok(written) => Ok(written),
            Err(e) => Err(self.converter.served_error(e).await),
        }
    }

    async fn update(
        &self,
        key: &[u8],
        value: Bytes,
        expected_mod_revision: Revision,
    ) -> listwatch_storage::Result<WriteResponse> {
        let value = self.converter.to_stored(value).await?;
        match self.inner.update(key, value, expected_mod_revision).await {
            Ok(written) => Ok(written),
            Err(e) => Err(self.converter.served_error(e).await),
        }
    }

    async fn delete(
        &self,
        key: &[u8],
        expected_mod_revision: Option<Revision>,
    ) -> listwatch_storage::Result<DeleteResponse> {
        let mut deleted = match self.inner.delete(key, expected_mod_revision).await {
            Ok(deleted) => deleted,
            Err(e) => return Err(self.converter.served_error(e).await),
        };
        self.converter.to_served(std::slice::from_mut(&mut deleted.prev)).await?;
        Ok(deleted)
    }

    async fn watch(&self, request: WatchRequest) -> listwatch_storage::Result<Watch> {
        let inner = self.inner.watch(request).await?;
        let progress = inner.progress_requester();
        Ok(Watch::new(Box::new(ConvertingWatch { inner, converter: self.converter.clone() }), progress))
    }

    async fn compact(&self, revision: Revision) -> listwatch_storage::Result<()> {
        self.inner.compact(revision).await
    }

    async fn current_revision(&self) -> listwatch_storage::Result<Revision> {
        self.inner.current_revision().await
    }

    async fn compacted_revision(&self) -> listwatch_storage::Result<Revision> {
        self.inner.compacted_revision().await
    }

    async fn version(&self) -> listwatch_storage::Result<BackendVersion> {
        self.inner.version().await
    }
}

/// A storage watch whose events carry values in the served version. A batch that cannot be
/// converted ends the watch with the error (its watcher relists, as kube's reflector does).
struct ConvertingWatch {
    inner: Watch,
    converter: Arc<Converter>,
}

#[async_trait]
impl WatchStream for ConvertingWatch {
    async fn next(&mut self) -> Option<listwatch_storage::Result<WatchResponse>> {
        let events = match self.inner.next().await? {
            Ok(WatchResponse::Events(events)) => events,
            other => return Some(other),
        };
        // One review for the batch: every value and previous value (a deletion's tombstone
        // has none).
        let mut slots = Vec::new();
        let mut kvs = Vec::new();
        for (i, event) in events.iter().enumerate() {
            if !event.kv.value.is_empty() {
                slots.push((i, false));
                kvs.push(event.kv.clone());
            }
            if let Some(prev) = event.prev.as_ref().filter(|p| !p.value.is_empty()) {
                slots.push((i, true));
                kvs.push(prev.clone());
            }
        }
        if let Err(e) = self.converter.to_served(&mut kvs).await {
            return Some(Err(e));
        }
        let mut out: Vec<Event> = events.iter().map(|e| Event::clone(e)).collect();
        for ((i, is_prev), kv) in slots.into_iter().zip(kvs) {
            if is_prev {
                out[i].prev = Some(kv);
            } else {
                out[i].kv = kv;
            }
        }
        Some(Ok(WatchResponse::Events(out.into_iter().map(Arc::new).collect())))
    }
}
