//! Transports and representations (issue: WebSocket and protobuf watches, streaming lists,
//! Table and metadata-only output, HTTP/2): protobuf frames decoded with prost, a real
//! WebSocket client, one HTTP/2 connection carrying 100 watches, kubectl over TLS.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use listwatch_proto::prost_reflect::{DynamicMessage, Value as ProtoValue};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::on_both_backends;
use crate::support::{Backend, Server, Watch, metric};

on_both_backends!(
    protobuf_get_list_and_watch,
    protobuf_bodies_and_field_validation,
    websocket_watches,
    tables_and_metadata_only,
    http2_carries_many_watches,
);

mod tls {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn kubectl_over_tls() {
        super::kubectl_over_tls().await;
    }
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const SECONDS: Duration = Duration::from_secs(10);

fn message(name: &str) -> listwatch_proto::prost_reflect::MessageDescriptor {
    listwatch_proto::descriptor_pool().get_message_by_name(name).unwrap_or_else(|| panic!("{name} in the schema"))
}

/// An enveloped object (`k8s\0` + Unknown) decoded into JSON.
fn decode_enveloped(bytes: &[u8]) -> (String, String, Value) {
    let envelope = listwatch_proto::unwrap_unknown(bytes).expect("k8s\\0 + runtime.Unknown");
    let (group, version) = match envelope.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", envelope.api_version),
    };
    let object = listwatch_proto::decode_object(group, version, envelope.kind, envelope.raw).expect("decodes").object;
    (envelope.api_version.to_string(), envelope.kind.to_string(), object)
}

/// A `metav1.WatchEvent` message: its type and the enveloped object bytes.
fn decode_watch_event(bytes: &[u8]) -> (String, Vec<u8>) {
    let event = DynamicMessage::decode(message("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent"), bytes)
        .expect("a WatchEvent");
    let event_type = event.get_field_by_name("type").and_then(|v| v.as_str().map(String::from)).expect("type");
    let object = event.get_field_by_name("object").expect("object");
    let ProtoValue::Message(raw_extension) = object.as_ref() else { panic!("object is a RawExtension") };
    let raw = raw_extension.get_field_by_name("raw").and_then(|v| v.as_bytes().map(|b| b.to_vec())).expect("raw");
    (event_type, raw)
}

async fn protobuf_get_list_and_watch(backend: Backend) {
    let server = Server::start("proto-read", backend, &[]).await;
    let (_, created) = server
        .post_json(
            CMS,
            &json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "data": {"k": "v"}, "binaryData": {"b": "AAEC"}}),
        )
        .await;
    let get = |path: String| server.http.get(server.api(&path)).header("Accept", PROTOBUF).send();
    let r = get(format!("{CMS}/p")).await.unwrap();
    assert_eq!(r.headers()["content-type"], PROTOBUF);
    let (api_version, kind, object) = decode_enveloped(&r.bytes().await.unwrap());
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    assert_eq!(object["data"], created["data"]);
    assert_eq!(object["binaryData"]["b"], "AAEC");
    assert_eq!(object["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
    // A list: ConfigMapList with its items.
    let r = get(CMS.to_string()).await.unwrap();
    let (_, kind, list) = decode_enveloped(&r.bytes().await.unwrap());
    assert_eq!(kind, "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "p");
    assert!(list["metadata"]["resourceVersion"].as_str().unwrap().parse::<i64>().unwrap() > 0);

    // A watch: length-prefixed WatchEvent frames.
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let r = get(format!("{CMS}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true")).await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/vnd.kubernetes.protobuf;stream=watch");
    let mut stream = r.bytes_stream();
    let (code, _) =
        server.send("PATCH", &format!("{CMS}/p"), "application/merge-patch+json", r#"{"data":{"k":"w"}}"#).await;
    assert_eq!(code, 200);
    let mut buffer = Vec::new();
    let frame = tokio::time::timeout(SECONDS, async {
        loop {
            if buffer.len() >= 4 {
                let len = u32::from_be_bytes(buffer[..4].try_into().unwrap()) as usize;
                if buffer.len() >= 4 + len {
                    return buffer[4..4 + len].to_vec();
                }
            }
            buffer.extend_from_slice(&stream.next().await.expect("more frames").unwrap());
        }
    })
    .await
    .expect("a frame in time");
    let (event_type, raw) = decode_watch_event(&frame);
    assert_eq!(event_type, "MODIFIED");
    let (_, kind, object) = decode_enveloped(&raw);
    assert_eq!(kind, "ConfigMap");
    assert_eq!(object["data"]["k"], "w");
}

async fn protobuf_bodies_and_field_validation(backend: Backend) {
    let server = Server::start("proto-write", backend, &[]).await;
    // A protobuf body, as kubectl create configmap sends it.
    let raw =
        listwatch_proto::encode_object("", "v1", "ConfigMap", &json!({"metadata": {"name": "pb"}, "data": {"a": "1"}}))
            .unwrap();
    let body = listwatch_proto::wrap_unknown("v1", "ConfigMap", &raw);
    let (code, created) = server.send("POST", CMS, PROTOBUF, body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["data"]["a"], "1");
    // Garbage without the k8s\0 prefix is refused.
    let (code, _) = server.send("POST", CMS, PROTOBUF, Bytes::from_static(b"nonsense")).await;
    assert_eq!(code, 400);

    // Unknown and duplicate fields: 400 under Strict, a Warning under Warn, dropped under Ignore.
    let unknown = r#"{"metadata":{"name":"u1"},"data":{"a":"1"},"datta":{"b":"2"}}"#;
    let (code, body) = server.send("POST", &format!("{CMS}?fieldValidation=Strict"), "application/json", unknown).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datta\""
    );
    let duplicate = r#"{"metadata":{"name":"u2","name":"u3"}}"#;
    let (code, body) =
        server.send("POST", &format!("{CMS}?fieldValidation=Strict"), "application/json", duplicate).await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().ends_with("strict decoding error: duplicate field \"metadata.name\""),
        "{body}"
    );
    let r = server
        .http
        .post(server.api(&format!("{CMS}?fieldValidation=Warn")))
        .header("Content-Type", "application/json")
        .body(unknown)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["warning"], "299 - \"unknown field \\\"datta\\\"\"");
    let stored: Value = r.json().await.unwrap();
    assert!(stored.get("datta").is_none(), "unknown fields are dropped: {stored}");
    let (code, stored) = server
        .send("POST", &format!("{CMS}?fieldValidation=Ignore"), "application/json", unknown.replace("u1", "u4"))
        .await;
    assert_eq!(code, 201);
    assert!(stored.get("datta").is_none());
    // A patch that introduces an unknown field under Strict: 422 on the patch.
    let (code, body) = server
        .send("PATCH", &format!("{CMS}/u1?fieldValidation=Strict"), "application/merge-patch+json", r#"{"spex":1}"#)
        .await;
    assert_eq!(code, 422, "{body}");
    // kubectl validates on the server and shows kube's message.
    let k = server.kubectl();
    let out = k
        .run_with_input(
            &["create", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndatta: {a: b}\n",
        )
        .await;
    assert!(!out.success && out.stderr.contains("strict decoding error: unknown field \"datta\""), "{}", out.stderr);
}

fn ws_request(
    server: &Server,
    path: &str,
    origin: Option<&str>,
    protocols: &[&str],
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let url = format!("{}{path}", server.url.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().unwrap();
    if let Some(origin) = origin {
        request.headers_mut().insert("Origin", origin.parse().unwrap());
    }
    if !protocols.is_empty() {
        request.headers_mut().insert("Sec-WebSocket-Protocol", protocols.join(", ").parse().unwrap());
    }
    request
}

fn handshake_status(result: Result<impl Sized, WsError>) -> u16 {
    match result {
        Err(WsError::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("expected an HTTP refusal, got a connection"),
    }
}

async fn websocket_watches(backend: Backend) {
    let server = Server::start("websocket", backend, &[]).await;
    let (_, created) = server.post_json(CMS, &json!({"metadata": {"name": "w"}})).await;
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let path = format!("{CMS}?watch=1&resourceVersion={rv}");
    // No Origin: 403. Two subprotocols: 400.
    assert_eq!(handshake_status(tokio_tungstenite::connect_async(ws_request(&server, &path, None, &[])).await), 403);
    assert_eq!(
        handshake_status(
            tokio_tungstenite::connect_async(ws_request(&server, &path, Some("http://x"), &["a", "b"])).await
        ),
        400
    );
    // A bearer token subprotocol is taken out; the one remaining is echoed.
    let token = "base64url.bearer.authorization.k8s.io.dG9rZW4";
    let (mut socket, response) =
        tokio_tungstenite::connect_async(ws_request(&server, &path, Some("http://x"), &[token, "v4.channel.k8s.io"]))
            .await
            .unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "v4.channel.k8s.io");
    server.send("PATCH", &format!("{CMS}/w"), "application/merge-patch+json", r#"{"data":{"a":"1"}}"#).await;
    server.send("DELETE", &format!("{CMS}/w"), "application/json", "").await;
    // One event per text message, the JSON line with its newline.
    for expected in ["MODIFIED", "DELETED"] {
        let message = tokio::time::timeout(SECONDS, socket.next()).await.unwrap().unwrap().unwrap();
        let Message::Text(text) = message else { panic!("JSON events are text frames: {message:?}") };
        assert!(text.ends_with('\n'));
        let event: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(event["type"], expected);
    }
    // The client's close ends the watch at once.
    let labels = "kind=\"ConfigMap\"";
    assert_eq!(metric(&server, "apiserver_registered_watchers", labels).await, 1.0);
    socket.close(None).await.unwrap();
    let freed = tokio::time::timeout(SECONDS, async {
        while metric(&server, "apiserver_registered_watchers", labels).await != 0.0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(freed.is_ok(), "the watch outlived its WebSocket");

    // Protobuf over WebSocket: binary messages, each one WatchEvent (no length prefix).
    let mut request =
        ws_request(&server, &format!("{CMS}?watch=1&resourceVersion=0&timeoutSeconds=2"), Some("http://x"), &[]);
    request.headers_mut().insert("Accept", PROTOBUF.parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    server.post_json(CMS, &json!({"metadata": {"name": "w2"}})).await;
    let message = tokio::time::timeout(SECONDS, socket.next()).await.unwrap().unwrap().unwrap();
    let Message::Binary(bytes) = message else { panic!("protobuf events are binary frames: {message:?}") };
    let (event_type, raw) = decode_watch_event(&bytes);
    assert_eq!(event_type, "ADDED");
    assert_eq!(decode_enveloped(&raw).2["metadata"]["name"], "w2");
    // At the deadline the server closes the socket.
    let closed = tokio::time::timeout(SECONDS, async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Close(_) = message {
                return;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server did not close at the deadline");
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

async fn tables_and_metadata_only(backend: Backend) {
    let server = Server::start("tables", backend, &[]).await;
    let pod = json!({"metadata": {"name": "p1", "labels": {"app": "x"}}, "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}], "nodeName": "n1"},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}}, "image": "i", "imageID": "", "lastState": {}},
            {"name": "b", "ready": true, "restartCount": 0, "state": {"running": {}}, "image": "i", "imageID": "", "lastState": {}}]}});
    let (code, created) = server.post_json("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201, "{created}");
    let status = json!({"status": pod["status"]});
    let (code, _) = server
        .send("PATCH", "/api/v1/namespaces/default/pods/p1/status", "application/merge-patch+json", status.to_string())
        .await;
    assert_eq!(code, 200);
    let table: Value =
        server.http.get(server.api("/api/v1/pods")).header("Accept", TABLE).send().await.unwrap().json().await.unwrap();
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"]);
    let row = &table["rows"][0];
    assert_eq!(row["cells"].as_array().unwrap()[0..4], [json!("p1"), json!("2/2"), json!("Running"), json!("2")]);
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["metadata"]["labels"]["app"], "x");
    // includeObject=Object and None.
    let full: Value = server
        .http
        .get(server.api("/api/v1/pods?includeObject=Object"))
        .header("Accept", TABLE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(full["rows"][0]["object"]["kind"], "Pod");
    let none: Value = server
        .http
        .get(server.api("/api/v1/pods?includeObject=None"))
        .header("Accept", TABLE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(none["rows"][0].get("object").is_none());
    // A Table watch: column definitions only in the first event.
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let url = server.api(&format!("/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}"));
    let client = reqwest::Client::builder()
        .default_headers([(reqwest::header::ACCEPT, TABLE.parse().unwrap())].into_iter().collect())
        .build()
        .unwrap();
    let mut w = Watch::open_with(&client, &url).await;
    server
        .send(
            "PATCH",
            "/api/v1/namespaces/default/pods/p1",
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"v":"1"}}}"#,
        )
        .await;
    server
        .send(
            "PATCH",
            "/api/v1/namespaces/default/pods/p1",
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"v":"2"}}}"#,
        )
        .await;
    let first = w.next(SECONDS).await.unwrap();
    let second = w.next(SECONDS).await.unwrap();
    assert_eq!(first["object"]["kind"], "Table");
    assert!(first["object"]["columnDefinitions"].is_array());
    assert!(second["object"]["columnDefinitions"].is_null());
    assert_eq!(second["object"]["rows"][0]["cells"][0], "p1");

    // Metadata only: a single object, a list, a watch.
    let pom = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let one: Value = server
        .http
        .get(server.api("/api/v1/namespaces/default/pods/p1"))
        .header("Accept", pom)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1");
    assert!(one.get("spec").is_none());
    let list: Value = server
        .http
        .get(server.api("/api/v1/pods"))
        .header("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["name"], "p1");

    // kubectl's table output, as against a real cluster.
    let k = server.kubectl();
    let out = k.run(&["get", "pods", "-A", "--show-labels"]).await.ok();
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "LABELS"]);
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..5], ["default", "p1", "2/2", "Running", "2"]);
    assert_eq!(row.last(), Some(&"app=x,v=2"));
    for name in ["b", "c", "a"] {
        server
            .post_json(CMS, &json!({"metadata": {"name": format!("cm-{name}")}, "data": {"k": format!("{name}")}}))
            .await;
    }
    let sorted = k.run(&["get", "configmaps", "--sort-by=.data.k", "-o", "name"]).await.ok();
    assert_eq!(sorted.lines().collect::<Vec<_>>(), ["configmap/cm-a", "configmap/cm-b", "configmap/cm-c"]);
    let wide = k.run(&["get", "pods", "-o", "wide"]).await.ok();
    assert!(wide.lines().nth(1).unwrap().contains("10.0.0.1") && wide.contains("n1"), "{wide}");
}

async fn http2_carries_many_watches(backend: Backend) {
    use http_body_util::BodyExt;
    let server = Server::start("http2", backend, &[]).await;
    let (_, created) = server.post_json(CMS, &json!({"metadata": {"name": "h"}})).await;
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    // One TCP connection, HTTP/2 with prior knowledge, 100 watches on it.
    let addr = server.url.trim_start_matches("http://").to_string();
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut bodies = Vec::new();
    for _ in 0..100 {
        let mut sender = sender.clone();
        let request = http::Request::get(format!("http://{addr}{CMS}?watch=1&resourceVersion={rv}"))
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), http::Version::HTTP_2);
        bodies.push(response.into_body());
    }
    let (_, modified) =
        server.send("PATCH", &format!("{CMS}/h"), "application/merge-patch+json", r#"{"data":{"x":"y"}}"#).await;
    let want = modified["metadata"]["resourceVersion"].clone();
    let reads = bodies.into_iter().map(|mut body| {
        let want = want.clone();
        async move {
            let mut buffer = Vec::new();
            loop {
                if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let event: Value = serde_json::from_slice(&buffer[..end]).unwrap();
                    assert_eq!(event["type"], "MODIFIED");
                    assert_eq!(event["object"]["metadata"]["resourceVersion"], want);
                    return;
                }
                let frame = body.frame().await.expect("more data").unwrap();
                if let Ok(data) = frame.into_data() {
                    buffer.extend_from_slice(&data);
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(reads))
        .await
        .expect("every watch got the event");
}

async fn kubectl_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let storage = vec!["--data-dir".to_string(), dir.path().join("data").display().to_string()];
    let server = Server::start_with_storage(dir, storage, None, &["--tls-generate"]).await;
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let k = server.kubectl();
    assert_eq!(
        k.run(&["create", "configmap", "secure", "--from-literal=a=b"]).await.ok().trim(),
        "configmap/secure created"
    );
    assert_eq!(k.get_json(&["configmap", "secure"]).await["data"]["a"], "b");
    // ALPN offers HTTP/2, so many watches can share one connection as client-go does; the
    // generated CA (named by the kubeconfig) verifies the server.
    let ca = std::fs::read(server.dir.path().join("data/pki/ca.crt")).unwrap();
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .build()
        .unwrap();
    let r = client.get(server.api(CMS)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.version(), http::Version::HTTP_2);
}
