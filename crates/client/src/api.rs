//! [`Api`]: the REST verbs of one resource, in one namespace or all of them.
//!
//! Reads (GET, LIST, WATCH) ask for JSON, or for protobuf with [`Encoding::Protobuf`]; the
//! response is decoded by its `Content-Type`, so a kind the server cannot serve as protobuf
//! (CRDs, aggregated APIs) still works. Watches go over chunked HTTP (either HTTP version) or,
//! with [`WatchTransport::WebSocket`], over a WebSocket. Writes send JSON.
//!
//! `Api` also implements [`ListerWatcher`], so it feeds reflectors and informers directly.

use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::Method;
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::Client;
use crate::error::Error;
use crate::event::{DEFAULT_MAX_EVENT_BYTES, StreamFormat};
use crate::list_decoder::{ListDecoder, decode_json};
use crate::params::{ListParams, WatchParams};
use crate::reflector::ListerWatcher;
use crate::resource::{ApiResource, Object, ObjectList, Resource, Scale};
use crate::watch::{WatchStream, body_events};
use crate::write_params::{DeleteParams, Patch};

/// The representation reads ask for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`.
    #[default]
    Json,
    /// `application/vnd.kubernetes.protobuf` (falls back to JSON per response, as the server
    /// decides). Needs the `protobuf` feature.
    Protobuf,
}

impl Encoding {
    fn accept(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            // client-go's protobuf clients send the same: protobuf, else anything.
            Encoding::Protobuf => "application/vnd.kubernetes.protobuf, application/json;q=0.9",
        }
    }
}

/// How watches are carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchTransport {
    /// A streamed HTTP response (chunked on HTTP/1.1, a stream on HTTP/2).
    #[default]
    Http,
    /// A WebSocket, one event per message.
    WebSocket,
}

/// The verbs of one resource. Cheap to clone.
pub struct Api<K> {
    client: Client,
    resource: ApiResource,
    namespace: Option<String>,
    encoding: Encoding,
    watch_transport: WatchTransport,
    max_event_bytes: usize,
    _object: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            encoding: self.encoding,
            watch_transport: self.watch_transport,
            max_event_bytes: self.max_event_bytes,
            _object: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace)
            .field("encoding", &self.encoding)
            .field("watch_transport", &self.watch_transport)
            .finish()
    }
}

impl<K: Resource> Api<K> {
    /// A typed resource in one namespace.
    pub fn namespaced(client: Client, namespace: &str) -> Api<K> {
        Api::new(client, ApiResource::of::<K>(), Some(namespace))
    }

    /// A typed resource across all namespaces (or a cluster-scoped one).
    pub fn all(client: Client) -> Api<K> {
        Api::new(client, ApiResource::of::<K>(), None)
    }

    /// A typed resource in the kubeconfig context's namespace.
    pub fn default_namespaced(client: Client) -> Api<K> {
        let namespace = client.default_namespace().to_owned();
        Api::namespaced(client, &namespace)
    }
}

impl<K: Object> Api<K> {
    /// Any resource, typed or [`DynamicObject`](crate::DynamicObject), in `namespace` (or all).
    pub fn new(client: Client, resource: ApiResource, namespace: Option<&str>) -> Api<K> {
        Api {
            client,
            namespace: namespace.filter(|ns| resource.namespaced && !ns.is_empty()).map(str::to_owned),
            resource,
            encoding: Encoding::Json,
            watch_transport: WatchTransport::Http,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            _object: PhantomData,
        }
    }

    /// Reads (GET, LIST, WATCH) in `encoding`.
    pub fn with_encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// Carries watches over `transport` (HTTP streaming or WebSocket).
    pub fn with_watch_transport(mut self, transport: WatchTransport) -> Self {
        self.watch_transport = transport;
        self
    }

    /// The largest watch event accepted (default 64 MiB).
    pub fn with_max_event_bytes(mut self, max: usize) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// The client requests go through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The resource this handle reads and writes.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace requests are scoped to; `None` for all namespaces or a cluster-scoped kind.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn collection(&self) -> String {
        self.resource.collection_path(self.namespace.as_deref())
    }

    fn item(&self, name: &str) -> Result<String, Error> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidRequest(format!(
                "{} are namespaced: make the Api with a namespace to name one",
                self.resource.plural
            )));
        }
        if name.is_empty() || name.contains('/') {
            return Err(Error::InvalidRequest(format!("invalid object name {name:?}")));
        }
        Ok(self.resource.object_path(self.namespace.as_deref(), name))
    }

    /// GET one object.
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        let (headers, body) = self.client.request(Method::GET, &self.item(name)?, self.encoding.accept(), None).await?;
        decode_body(&headers, &body, "an object")
    }

    /// GET one object; `None` on 404.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, Error> {
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One LIST request (one page when `params.limit` is set).
    ///
    /// A JSON list is decoded item by item while it arrives, so the body is
    /// never held whole next to the objects.
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, Error> {
        self.list_with(params, std::convert::identity).await
    }

    /// [`Api::list`] with each item put in an `Arc` as soon as it is decoded: what a cache
    /// (a reflector's store) holds, without a `Vec<K>` of every object next to the `Arc`s.
    pub async fn list_shared(&self, params: &ListParams) -> Result<ObjectList<Arc<K>>, Error> {
        self.list_with(params, Arc::new).await
    }

    async fn list_with<T>(&self, params: &ListParams, wrap: fn(K) -> T) -> Result<ObjectList<T>, Error> {
        let path = with_query(self.collection(), &params.query());
        self.client
            .within_request_timeout(async {
                let response = self.client.request_stream(Method::GET, &path, self.encoding.accept()).await?;
                let (parts, mut body) = response.into_parts();
                if is_protobuf(&parts.headers) {
                    let bytes = body.collect().await.map_err(Error::Body)?.to_bytes();
                    let list: ObjectList<K> = decode_body(&parts.headers, &bytes, "a list")?;
                    return Ok(list.map_items(wrap));
                }
                let mut decoder = ListDecoder::new(wrap);
                while let Some(frame) = body.frame().await {
                    if let Ok(data) = frame.map_err(Error::Body)?.into_data() {
                        decoder.push(&data)?;
                    }
                }
                decoder.finish()
            })
            .await
    }

    /// Opens a WATCH. Returns once the server has accepted it (the 200 head, or the WebSocket
    /// handshake); refusals before that are `Err` here, later failures are items of the stream.
    pub async fn watch(&self, params: &WatchParams) -> Result<WatchStream<K>, Error> {
        self.watch_with(params, std::convert::identity).await
    }

    /// [`Api::watch`] with each object put in an `Arc` as soon as it is decoded (what a cache
    /// holds; the object is moved once instead of at every step to the cache).
    pub async fn watch_shared(&self, params: &WatchParams) -> Result<WatchStream<Arc<K>>, Error> {
        self.watch_with(params, Arc::new).await
    }

    async fn watch_with<T: Send + 'static>(
        &self,
        params: &WatchParams,
        wrap: fn(K) -> T,
    ) -> Result<WatchStream<T>, Error> {
        let path = with_query(self.collection(), &params.query());
        let accept = match self.encoding {
            Encoding::Json => "application/json",
            Encoding::Protobuf => {
                "application/vnd.kubernetes.protobuf;stream=watch, application/vnd.kubernetes.protobuf, application/json;q=0.9"
            }
        };
        let idle = params.effective_idle_timeout();
        match self.watch_transport {
            WatchTransport::Http => {
                let response = self.client.request_stream(Method::GET, &path, accept).await?;
                let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
                let format = StreamFormat::from_content_type(content_type);
                Ok(body_events(response.into_body(), format, self.max_event_bytes, idle, wrap))
            }
            WatchTransport::WebSocket => {
                crate::websocket::watch(&self.client, &path, accept, self.max_event_bytes, idle, wrap).await
            }
        }
    }

    /// POST a new object (in this Api's namespace).
    pub async fn create<T: Serialize>(&self, object: &T) -> Result<K, Error> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidRequest("create needs an Api with a namespace".into()));
        }
        self.write(Method::POST, self.collection(), "application/json", json(object)?).await
    }

    /// PUT an object (an update guarded by its `metadata.resourceVersion`, when set).
    pub async fn replace<T: Serialize>(&self, name: &str, object: &T) -> Result<K, Error> {
        self.write(Method::PUT, self.item(name)?, "application/json", json(object)?).await
    }

    /// PATCH with a JSON merge patch.
    pub async fn patch_merge(&self, name: &str, patch: &serde_json::Value) -> Result<K, Error> {
        self.write(Method::PATCH, self.item(name)?, "application/merge-patch+json", json(patch)?).await
    }

    /// PATCH with any of the [`Patch`] types.
    pub async fn patch(&self, name: &str, patch: &Patch) -> Result<K, Error> {
        self.write(Method::PATCH, self.item(name)?, patch.content_type(), json(patch.body())?).await
    }

    /// DELETE an object. The server's answer (the object, or a Status) is not decoded.
    pub async fn delete(&self, name: &str) -> Result<(), Error> {
        self.delete_with(name, &DeleteParams::default()).await
    }

    /// DELETE an object with `DeleteOptions`: grace period, propagation policy, preconditions.
    pub async fn delete_with(&self, name: &str, params: &DeleteParams) -> Result<(), Error> {
        let body = (params != &DeleteParams::default()).then(|| json(&params.to_body())).transpose()?;
        let body = body.map(|bytes| ("application/json", bytes));
        self.client.request(Method::DELETE, &self.item(name)?, "application/json", body).await.map(|_| ())
    }

    // ---- subresources -----------------------------------------------------------------------

    /// GET `{object}/status` (the whole object, as the server returns it).
    pub async fn get_status(&self, name: &str) -> Result<K, Error> {
        let path = self.subresource(name, "status")?;
        let (headers, body) = self.client.request(Method::GET, &path, self.encoding.accept(), None).await?;
        decode_body(&headers, &body, "an object")
    }

    /// PUT `{object}/status`: only `.status` changes (and `metadata.resourceVersion` guards it).
    pub async fn replace_status<T: Serialize>(&self, name: &str, object: &T) -> Result<K, Error> {
        self.write(Method::PUT, self.subresource(name, "status")?, "application/json", json(object)?).await
    }

    /// PATCH `{object}/status`: only `.status` changes.
    pub async fn patch_status(&self, name: &str, patch: &Patch) -> Result<K, Error> {
        self.write(Method::PATCH, self.subresource(name, "status")?, patch.content_type(), json(patch.body())?).await
    }

    /// GET `{object}/scale`: the autoscaling/v1 `Scale` of a deployment or replicaset.
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        let path = self.subresource(name, "scale")?;
        let (headers, body) = self.client.request(Method::GET, &path, "application/json", None).await?;
        decode_body(&headers, &body, "a Scale")
    }

    /// PATCH `{object}/scale` to `replicas` (what `kubectl scale` does).
    pub async fn scale(&self, name: &str, replicas: i32) -> Result<Scale, Error> {
        let patch = json(&serde_json::json!({"spec": {"replicas": replicas}}))?;
        let path = self.subresource(name, "scale")?;
        let (headers, body) = self
            .client
            .request(Method::PATCH, &path, "application/json", Some(("application/merge-patch+json", patch)))
            .await?;
        decode_body(&headers, &body, "a Scale")
    }

    fn subresource(&self, name: &str, subresource: &str) -> Result<String, Error> {
        Ok(format!("{}/{subresource}", self.item(name)?))
    }

    async fn write(&self, method: Method, path: String, content_type: &str, body: Bytes) -> Result<K, Error> {
        let (headers, body) =
            self.client.request(method, &path, "application/json", Some((content_type, body))).await?;
        decode_body(&headers, &body, "the written object")
    }
}

impl<K: Object> ListerWatcher<K> for Api<K> {
    fn list<'a>(&'a self, params: &'a ListParams) -> BoxFuture<'a, Result<ObjectList<Arc<K>>, Error>> {
        Box::pin(Api::list_shared(self, params))
    }

    fn watch<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<K>, Error>> {
        Box::pin(Api::watch(self, params))
    }

    fn watch_shared<'a>(&'a self, params: &'a WatchParams) -> BoxFuture<'a, Result<WatchStream<Arc<K>>, Error>> {
        Box::pin(Api::watch_shared(self, params))
    }
}

fn with_query(path: String, query: &str) -> String {
    if query.is_empty() { path } else { format!("{path}?{query}") }
}

fn json<T: Serialize>(object: &T) -> Result<Bytes, Error> {
    serde_json::to_vec(object).map(Bytes::from).map_err(|e| Error::InvalidRequest(format!("encoding the body: {e}")))
}

fn is_protobuf(headers: &http::HeaderMap) -> bool {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    content_type.starts_with("application/vnd.kubernetes.protobuf")
}

/// A response body as `T`, by its content type.
fn decode_body<T: DeserializeOwned>(headers: &http::HeaderMap, body: &[u8], what: &'static str) -> Result<T, Error> {
    if is_protobuf(headers) {
        #[cfg(feature = "protobuf")]
        {
            let value = crate::event::decode_protobuf_object(body)?;
            return serde_json::from_value(value).map_err(|e| Error::decode(what, e));
        }
        #[cfg(not(feature = "protobuf"))]
        return Err(Error::decode(what, "a protobuf response, and this build has no `protobuf` feature"));
    }
    decode_json(body, what)
}
