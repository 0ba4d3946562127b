//! The watch decoders behind a real socket, against hand-written servers that cut the stream
//! where they like: chunks holding one byte, several events, or half an event; a body that ends
//! inside an event; a server that goes silent; and a WebSocket server that checks the handshake
//! (the `Origin` header kube-apiserver requires) and sends one event per message.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use listwatch_client::{
    Api, ApiResource, Client, Config, DynamicObject, Encoding, Error, Object, ObjectMeta, WatchEvent, WatchParams,
    WatchTransport, impl_resource,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(20);

const EVENTS: &str = concat!(
    r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"6"},"data":{"x":"line\nbreak } and \" quote"}}}"#,
    "\n",
    r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"7"}}}"#,
    "\n",
    r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","creationTimestamp":null}}}"#,
    "\n",
    r#"{"type":"DELETED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"10"}}}"#,
    "\n",
);

/// Serves one connection: reads the request head, then lets `respond` write.
async fn serve_once<F, Fut>(respond: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                return;
            }
            head.push(byte[0]);
        }
        respond(socket).await;
    });
    url
}

async fn write_chunks(socket: &mut TcpStream, content_type: &str, body: &[u8], sizes: &[usize], finish: bool) {
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n");
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut rest = body;
    let mut sizes = sizes.iter().copied().cycle();
    while !rest.is_empty() {
        let size = sizes.next().unwrap_or(rest.len()).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        socket.write_all(format!("{size:x}\r\n").as_bytes()).await.unwrap();
        socket.write_all(chunk).await.unwrap();
        socket.write_all(b"\r\n").await.unwrap();
        socket.flush().await.unwrap();
        // Separate TCP segments, so the client really reads them one by one.
        tokio::task::yield_now().await;
        rest = tail;
    }
    if finish {
        socket.write_all(b"0\r\n\r\n").await.unwrap();
    }
    socket.flush().await.unwrap();
}

fn api(url: &str) -> Api<DynamicObject> {
    Api::new(Client::new(Config::new(url)).unwrap(), ApiResource::configmaps(), Some("default"))
}

async fn collect(api: &Api<DynamicObject>, params: &WatchParams) -> Vec<Result<WatchEvent<DynamicObject>, Error>> {
    let stream = api.watch(params).await.unwrap();
    tokio::time::timeout(WAIT, stream.collect::<Vec<_>>()).await.expect("the stream ends")
}

fn summary(events: &[Result<WatchEvent<DynamicObject>, Error>]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Ok(WatchEvent::Added(o)) => format!("ADDED {}", o.resource_version().unwrap()),
            Ok(WatchEvent::Modified(o)) => format!("MODIFIED {}", o.resource_version().unwrap()),
            Ok(WatchEvent::Deleted(o)) => format!("DELETED {}", o.resource_version().unwrap()),
            Ok(WatchEvent::Bookmark(b)) => format!("BOOKMARK {}", b.resource_version),
            Ok(WatchEvent::Error(s)) => format!("ERROR {}", s.code),
            Err(e) => format!("Err {e}"),
        })
        .collect()
}

const EXPECTED: [&str; 4] = ["ADDED 6", "MODIFIED 7", "BOOKMARK 9", "DELETED 10"];

#[tokio::test]
async fn json_events_split_across_chunks_and_packed_into_them() {
    for sizes in [vec![1], vec![1, 2, 3, 50], vec![7, 300], vec![EVENTS.len()], vec![171, 1, 1]] {
        let url = serve_once(move |mut socket| async move {
            write_chunks(&mut socket, "application/json", EVENTS.as_bytes(), &sizes, true).await;
        })
        .await;
        let events = collect(&api(&url), &WatchParams::default()).await;
        assert_eq!(summary(&events), EXPECTED);
        let Ok(WatchEvent::Added(object)) = &events[0] else { unreachable!() };
        assert_eq!(object.pointer("/data/x").and_then(|v| v.as_str()), Some("line\nbreak } and \" quote"));
    }
}

/// Counts how many config maps have been decoded (each test runs in its own process).
static DECODED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[derive(Debug)]
struct CountedConfigMap {
    metadata: ObjectMeta,
}

impl<'de> serde::Deserialize<'de> for CountedConfigMap {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Fields {
            metadata: ObjectMeta,
        }
        let fields = Fields::deserialize(deserializer)?;
        DECODED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(CountedConfigMap { metadata: fields.metadata })
    }
}

impl_resource!(CountedConfigMap, group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true);

#[tokio::test]
async fn events_packed_into_one_chunk_are_decoded_one_at_a_time_as_they_are_taken() {
    let url = serve_once(|mut socket| async move {
        write_chunks(&mut socket, "application/json", EVENTS.as_bytes(), &[EVENTS.len()], true).await;
    })
    .await;
    let api: Api<CountedConfigMap> = Api::namespaced(Client::new(Config::new(&url)).unwrap(), "default");
    let mut stream = api.watch(&WatchParams::default()).await.unwrap();
    let decoded = || DECODED.load(std::sync::atomic::Ordering::SeqCst);
    let mut next = async || tokio::time::timeout(WAIT, stream.next()).await.expect("an event").expect("not the end");
    assert!(matches!(next().await, Ok(WatchEvent::Added(_))));
    // The chunk holds three config maps, but only the one handed out has been decoded.
    assert_eq!(decoded(), 1);
    assert!(matches!(next().await, Ok(WatchEvent::Modified(_))));
    assert_eq!(decoded(), 2);
    assert!(matches!(next().await, Ok(WatchEvent::Bookmark(_))));
    assert_eq!(decoded(), 2);
    assert!(matches!(next().await, Ok(WatchEvent::Deleted(_))));
    assert_eq!(decoded(), 3);
}

#[tokio::test]
async fn protobuf_frames_split_across_chunks() {
    let mut body = Vec::new();
    for (kind, name, rv) in [("ADDED", "a", "6"), ("MODIFIED", "a", "7"), ("DELETED", "a", "10")] {
        let object = serde_json::json!({"metadata": {"name": name, "namespace": "default", "resourceVersion": rv}});
        let raw = listwatch_proto::encode_object("", "v1", "ConfigMap", &object).unwrap();
        let enveloped = listwatch_proto::wrap_unknown("v1", "ConfigMap", &raw);
        body.extend(listwatch_proto::frame(&listwatch_proto::encode_watch_event(kind, &enveloped)));
    }
    for sizes in [vec![1], vec![3, 5], vec![body.len()]] {
        let body = body.clone();
        let url = serve_once(move |mut socket| async move {
            write_chunks(&mut socket, "application/vnd.kubernetes.protobuf;stream=watch", &body, &sizes, true).await;
        })
        .await;
        let events = collect(&api(&url).with_encoding(Encoding::Protobuf), &WatchParams::default()).await;
        assert_eq!(summary(&events), ["ADDED 6", "MODIFIED 7", "DELETED 10"]);
    }
}

#[tokio::test]
async fn a_body_that_ends_inside_an_event_is_a_probable_eof() {
    let url = serve_once(|mut socket| async move {
        let cut = EVENTS.find("MODIFIED").unwrap();
        write_chunks(&mut socket, "application/json", &EVENTS.as_bytes()[..cut], &[40], true).await;
    })
    .await;
    let events = collect(&api(&url), &WatchParams::default()).await;
    assert_eq!(summary(&events)[0], "ADDED 6");
    let last = events.last().unwrap().as_ref().unwrap_err();
    assert!(last.is_probable_eof(), "{last:?}");

    // A connection that drops without ending the chunked body is one too.
    let url = serve_once(|mut socket| async move {
        write_chunks(&mut socket, "application/json", &EVENTS.as_bytes()[..100], &[100], false).await;
    })
    .await;
    let events = collect(&api(&url), &WatchParams::default()).await;
    let last = events.last().unwrap().as_ref().unwrap_err();
    assert!(last.is_probable_eof(), "{last:?}");
}

#[tokio::test]
async fn a_silent_server_trips_the_idle_timeout() {
    let url = serve_once(|mut socket| async move {
        write_chunks(&mut socket, "application/json", EVENTS.as_bytes(), &[EVENTS.len()], false).await;
        // Then nothing, with the connection open.
        let _ = socket.read(&mut [0u8; 1]).await;
    })
    .await;
    let params = WatchParams { idle_timeout: Some(Duration::from_millis(300)), ..WatchParams::default() };
    let events = collect(&api(&url), &params).await;
    assert_eq!(summary(&events)[..4], EXPECTED);
    let last = events[4].as_ref().unwrap_err();
    assert!(matches!(last, Error::Timeout { .. }) && last.is_probable_eof(), "{last:?}");
}

#[tokio::test]
async fn websocket_watch_sends_an_origin_and_takes_one_event_per_message() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (seen_tx, seen_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut request_seen = None;
        // The signature is tungstenite's handshake callback's.
        #[allow(clippy::result_large_err)]
        let callback = |request: &tokio_tungstenite::tungstenite::handshake::server::Request,
                        response: tokio_tungstenite::tungstenite::handshake::server::Response| {
            let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            request_seen = Some((request.uri().to_string(), header("origin"), header("sec-websocket-protocol")));
            Ok(response)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(socket, callback).await.unwrap();
        seen_tx.send(request_seen.unwrap()).unwrap();
        use tokio_tungstenite::tungstenite::Message;
        for line in EVENTS.split_inclusive('\n') {
            ws.send(Message::text(line)).await.unwrap();
        }
        let object = serde_json::json!({"metadata": {"name": "b", "namespace": "default", "resourceVersion": "11"}});
        let raw = listwatch_proto::encode_object("", "v1", "ConfigMap", &object).unwrap();
        let event =
            listwatch_proto::encode_watch_event("ADDED", &listwatch_proto::wrap_unknown("v1", "ConfigMap", &raw));
        ws.send(Message::binary(event)).await.unwrap();
        ws.close(None).await.unwrap();
    });
    let api = api(&format!("http://{address}")).with_watch_transport(WatchTransport::WebSocket);
    let params = WatchParams::default().at("5");
    let events = collect(&api, &params).await;
    let (uri, origin, protocol) = seen_rx.await.unwrap();
    assert_eq!(origin.as_deref(), Some(format!("http://{address}").as_str()), "kube-apiserver refuses a null origin");
    assert_eq!(protocol, None, "no subprotocol is offered");
    assert_eq!(uri, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=5&allowWatchBookmarks=true");
    assert_eq!(summary(&events), ["ADDED 6", "MODIFIED 7", "BOOKMARK 9", "DELETED 10", "ADDED 11"]);
}
