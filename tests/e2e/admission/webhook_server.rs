//! A webhook server for the admission tests: HTTPS with a CA of its own (its certificate
//! names 127.0.0.1 and `hook.system.svc`), answering AdmissionReviews by path, and keeping
//! every review it was sent.
//!
//! * `/deny`: refuses objects labelled `foo=bar` ("no foo allowed"), warns "checked by deny";
//! * `/mutate`: adds the annotation `mutated: "yes"` with a JSON patch;
//! * `/slow`: answers after 3 s (the configurations give it 1 s);
//! * `/garbage`: answers a body that is not JSON;
//! * `/wrong-uid`: allows, under another request's uid;
//! * `/bad-patch`: a JSON patch that cannot apply (removes a missing field);
//! * `/convert`: a ConversionReview answer: `spec.size` (a string, `v1`) ⇄ `spec.replicas`
//!   (an integer, `v2`), labelling each object `converted-to: <version>`;
//! * `/convert-fail`: a ConversionReview that failed ("cannot convert today");
//! * `/convert-kind`: converted objects of another kind.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

pub struct WebhookServer {
    pub addr: SocketAddr,
    /// The CA's PEM, base64 as a `caBundle` carries it.
    pub ca_bundle: String,
    /// Every review received: (path, request).
    pub reviews: Arc<Mutex<Vec<(String, Value)>>>,
    _dir: tempfile::TempDir,
}

impl WebhookServer {
    pub async fn start() -> WebhookServer {
        let dir = tempfile::tempdir().unwrap();
        let files = listwatch_apiserver::tls::generate(dir.path(), &["hook.system.svc".to_string()]).unwrap();
        let tls = listwatch_apiserver::tls::server_config(&files.cert, &files.key, None).unwrap();
        let ca = std::fs::read(&files.ca_cert).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let kept = reviews.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (acceptor, reviews) = (acceptor.clone(), kept.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else { return };
                    let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let reviews = reviews.clone();
                        async move {
                            let path = request.uri().path().to_string();
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            reviews.lock().unwrap().push((path.clone(), review["request"].clone()));
                            let answer = answer(&path, &review["request"]).await;
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from(answer))))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        WebhookServer { addr, ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca), reviews, _dir: dir }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The reviews sent to `path` so far.
    pub fn reviews_to(&self, path: &str) -> Vec<Value> {
        self.reviews.lock().unwrap().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }
}

fn review(response: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
        .unwrap()
}

fn patch(operations: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(operations.to_string())
}

async fn answer(path: &str, request: &Value) -> Vec<u8> {
    let uid = request["uid"].clone();
    let labels = &request["object"]["metadata"]["labels"];
    match path {
        "/deny" if labels["foo"] == "bar" => review(json!({
            "uid": uid, "allowed": false, "status": {"message": "no foo allowed"}, "warnings": ["checked by deny"],
        })),
        "/deny" => review(json!({"uid": uid, "allowed": true, "warnings": ["checked by deny"]})),
        "/mutate" => {
            let operation = if request["object"]["metadata"]["annotations"].is_object() {
                json!({"op": "add", "path": "/metadata/annotations/mutated", "value": "yes"})
            } else {
                json!({"op": "add", "path": "/metadata/annotations", "value": {"mutated": "yes"}})
            };
            review(json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch(json!([operation]))}))
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            review(json!({"uid": uid, "allowed": true}))
        }
        "/convert" | "/convert-fail" | "/convert-kind" => convert(path, request),
        "/garbage" => b"this is not an AdmissionReview".to_vec(),
        "/wrong-uid" => review(json!({"uid": "nope", "allowed": true})),
        "/bad-patch" => review(json!({
            "uid": uid, "allowed": true, "patchType": "JSONPatch",
            "patch": patch(json!([{"op": "remove", "path": "/spec/missing"}])),
        })),
        _ => review(json!({"uid": uid, "allowed": true})),
    }
}

fn conversion(response: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}),
    )
    .unwrap()
}

fn convert(path: &str, request: &Value) -> Vec<u8> {
    let uid = request["uid"].clone();
    if path == "/convert-fail" {
        return conversion(json!({"uid": uid, "result": {"status": "Failure", "message": "cannot convert today"}}));
    }
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let version = desired.rsplit('/').next().unwrap_or_default();
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|object| {
            let mut object = object.clone();
            let spec = object["spec"].as_object_mut().expect("a spec");
            if version == "v2" {
                if let Some(size) = spec.remove("size").and_then(|s| s.as_str().and_then(|s| s.parse::<i64>().ok())) {
                    spec.insert("replicas".into(), json!(size));
                }
            } else if let Some(replicas) = spec.remove("replicas").and_then(|r| r.as_i64()) {
                spec.insert("size".into(), json!(replicas.to_string()));
            }
            object["apiVersion"] = json!(desired);
            object["metadata"]["labels"]["converted-to"] = json!(version);
            if path == "/convert-kind" {
                object["kind"] = json!("Other");
            }
            object
        })
        .collect();
    conversion(json!({"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}))
}
