//! Watches over WebSocket (spec §2.5): browsers and some clients (the dashboard, older
//! kubectl plugins, JavaScript clients) upgrade a watch URL instead of reading a chunked body.
//! kube-apiserver serves these through `golang.org/x/net/websocket`, whose handshake rules
//! clients meet in the field: an `Origin` is required (403 without), at most one subprotocol
//! may be offered (400 for more; the one offered is echoed), and a bearer token may ride in a
//! `base64url.bearer.authorization.k8s.io.<token>` subprotocol that does not count. Then every
//! watch event is one message: a text message holding the JSON line, or for protobuf a binary
//! message holding the bare `WatchEvent` (no length prefix). The client's close ends the
//! watch; at `timeoutSeconds` the server closes the socket.
//!
//! These checks speak `ws://`, and `wss://` to an https target (with its TLS setup).

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use crate::checks::expect::{Expected, expect_events};
use crate::checks::protobuf::require_protobuf;
use crate::checks::stream::check_ndjson;
use crate::fixture::{Fixture, encode};
use crate::proto::{self, CONFIG_MAP, PROTOBUF, config_map_view, decode, unwrap};
use crate::watch::{EVENT_TIMEOUT, WatchEvent};
use crate::ws::{BEARER_PROTOCOL_PREFIX, Handshake, WsRead, WsWatch};
use crate::{CheckFailure, Target};

/// A browser's `Origin` for the target.
fn origin(target: &Target) -> String {
    target.base_url.clone()
}

fn with_origin(origin: &str) -> Handshake<'_> {
    Handshake { origin: Some(origin), ..Handshake::default() }
}

/// A JSON event (of an object of `kind`, unless an ERROR) from one text message: the message
/// is exactly one JSON line (§2.3) with its newline.
fn json_event(watch: &WsWatch, read: WsRead, kind: &str) -> Result<WatchEvent, CheckFailure> {
    let text = match read {
        WsRead::Text(text) => text,
        other => return Err(watch.failure(&format!("a JSON watch event must come as a text message, got {other:?}"))),
    };
    let lines = text.matches('\n').count();
    if lines != 1 || !text.ends_with('\n') {
        return Err(watch.failure(&format!(
            "a text message must hold exactly one event: one JSON line ending with its newline; this one has {lines} newline(s): {text:?}"
        )));
    }
    check_ndjson(&watch.path, text.as_bytes(), kind)?;
    let value: Value = serde_json::from_str(&text).map_err(|e| watch.failure(&format!("not JSON: {e}")))?;
    Ok(WatchEvent {
        kind: value["type"].as_str().unwrap_or_default().to_string(),
        object: value["object"].clone(),
        line: text.trim_end().to_string(),
    })
}

/// Compares a WebSocket watch's events with the expected ones (see [`expect_events`]).
fn expect_ws_events(
    watch: &WsWatch,
    what: &str,
    got: &[WatchEvent],
    expected: &[Expected],
    after: i64,
) -> Result<(), CheckFailure> {
    expect_events(&format!("WebSocket GET {}", watch.path), &watch.transcript(), what, got, expected, after)
}

/// §2.5: no `Origin` ⇒ 403; two subprotocols ⇒ 400; one subprotocol ⇒ 101 echoing it; a
/// bearer-token subprotocol plus one other ⇒ 101 echoing the other (the token authenticates
/// the watch: when the target has one, it is sent only that way).
pub async fn handshake(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "websocket-handshake");
    let origin = origin(target);
    let path = fx.watch_query("timeoutSeconds=10");

    let refused = |case: &str, expected: u16, answer: Result<WsWatch, crate::ws::Refusal>| match answer {
        Ok(_) => Err(CheckFailure::failed(format!(
            "WebSocket GET {path}: {case}: expected the handshake to be refused with HTTP {expected}, it was accepted"
        ))),
        Err(refusal) if refusal.status != expected => Err(CheckFailure::failed_with(
            format!("WebSocket GET {path}: {case}: expected HTTP {expected}, got {}", refusal.status),
            refusal.body,
        )),
        Err(_) => Ok(()),
    };
    refused("without an Origin header", 403, target.websocket(&path, &Handshake::default()).await?)?;
    let two = Handshake { protocols: vec!["a.example.com".into(), "b.example.com".into()], ..with_origin(&origin) };
    refused("offering two subprotocols", 400, target.websocket(&path, &two).await?)?;

    let one = Handshake { protocols: vec!["v4.channel.k8s.io".into()], ..with_origin(&origin) };
    let watch = target.websocket_watch(&path, &one).await?;
    if watch.protocol.as_deref() != Some("v4.channel.k8s.io") {
        return Err(watch.failure(&format!(
            "one subprotocol offered (v4.channel.k8s.io): it must be echoed, Sec-WebSocket-Protocol was {:?}",
            watch.protocol
        )));
    }
    drop(watch);

    let token = target.bearer_token().await?.0.unwrap_or_else(|| "listwatch-conformance".into());
    let bearer = format!("{BEARER_PROTOCOL_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token));
    let with_token = Handshake {
        protocols: vec![bearer, "v4.channel.k8s.io".into()],
        without_authorization: true,
        ..with_origin(&origin)
    };
    let mut watch = match target.websocket(&path, &with_token).await? {
        Ok(watch) => watch,
        Err(refusal) => {
            return Err(CheckFailure::failed_with(
                format!(
                    "WebSocket GET {path}: a bearer-token subprotocol plus v4.channel.k8s.io must be accepted (the token one does not count), got HTTP {}",
                    refusal.status
                ),
                refusal.body,
            ));
        }
    };
    if watch.protocol.as_deref() != Some("v4.channel.k8s.io") {
        return Err(watch.failure(&format!(
            "with a bearer-token subprotocol, the other one (v4.channel.k8s.io) must be the one echoed; Sec-WebSocket-Protocol was {:?}",
            watch.protocol
        )));
    }
    // The watch works: a new object arrives on it.
    let a = fx.create("a", "1").await?;
    let read = watch.next_data(EVENT_TIMEOUT).await?;
    let event = json_event(&watch, read, target.resource.kind())?;
    expect_ws_events(&watch, "the watch opened with a token subprotocol", &[event], &[Expected::new("ADDED", &a)], 0)
}

/// §2.5: a JSON watch over WebSocket sends one event per text message, the JSON line with its
/// newline, and the same events as the HTTP watch.
pub async fn json_messages(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "websocket-json-messages");
    let origin = origin(target);
    let start = fx.current_rv().await?;
    let mut watch = target
        .websocket_watch(&fx.watch_query(&format!("resourceVersion={start}&timeoutSeconds=30")), &with_origin(&origin))
        .await?;
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    fx.delete(&fx.name("b")).await?;
    let mut events = Vec::new();
    for _ in 0..4 {
        let read = watch.next_data(EVENT_TIMEOUT).await?;
        events.push(json_event(&watch, read, target.resource.kind())?);
    }
    expect_ws_events(
        &watch,
        "the WebSocket events",
        &events,
        &[
            Expected::new("ADDED", &a),
            Expected::new("ADDED", &b),
            Expected::new("MODIFIED", &a2),
            Expected::deleted(fx.name("b")),
        ],
        start,
    )
}

/// §2.5: a protobuf watch over WebSocket sends binary messages, each exactly one
/// `metav1.WatchEvent` without the stream's length prefix, its `object.raw` enveloped.
/// For a custom resource (no protobuf) the handshake is refused with kube's 406 instead, as
/// the plain watch is (see `protobuf-watch-frames`).
pub async fn protobuf_messages(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "websocket-protobuf-messages");
    let origin = origin(target);
    let handshake = Handshake { accept: Some(PROTOBUF), ..with_origin(&origin) };
    if target.resource.is_custom() {
        let path = fx.watch_query("timeoutSeconds=10");
        return match target.websocket(&path, &handshake).await? {
            Ok(watch) => Err(watch.failure(&format!(
                "a custom resource has no protobuf: a WebSocket watch accepting only {PROTOBUF} must be refused with HTTP 406, it was accepted"
            ))),
            Err(refusal) if refusal.status == 406 && refusal.body.contains("\"NotAcceptable\"") => Ok(()),
            Err(refusal) => Err(CheckFailure::failed_with(
                format!(
                    "WebSocket GET {path} accepting only {PROTOBUF}: a custom resource has no protobuf, so the handshake must be refused with HTTP 406 and a NotAcceptable Status, got HTTP {}",
                    refusal.status
                ),
                refusal.body,
            )),
        };
    }
    require_protobuf(&fx).await?;
    let start = fx.current_rv().await?;
    let mut watch = target
        .websocket_watch(&fx.watch_query(&format!("resourceVersion={start}&timeoutSeconds=30")), &handshake)
        .await?;
    let a = fx.create("a", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    let mut events = Vec::new();
    for _ in 0..2 {
        let bytes = match watch.next_data(EVENT_TIMEOUT).await? {
            WsRead::Binary(bytes) => bytes,
            other => {
                return Err(
                    watch.failure(&format!("a protobuf watch event must come as a binary message, got {other:?}"))
                );
            }
        };
        let event = proto::decode_watch_event(&bytes).map_err(|e| {
            let prefixed = bytes.len() > 4
                && u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize == bytes.len() - 4;
            let hint = if prefixed { " (it starts with a 4-byte length: WebSocket messages carry none)" } else { "" };
            watch.failure(&format!("a binary message is not one metav1.WatchEvent: {e}{hint}"))
        })?;
        let envelope = unwrap(&event.raw).map_err(|e| watch.failure(&format!("the event's object.raw: {e}")))?;
        envelope.expect("v1", "ConfigMap").map_err(|e| watch.failure(&e))?;
        let object = decode(CONFIG_MAP, &envelope.raw).map_err(|e| watch.failure(&e))?;
        events.push(WatchEvent { kind: event.kind, object: config_map_view(&object), line: proto::hex(&bytes) });
    }
    expect_ws_events(
        &watch,
        "the protobuf WebSocket events",
        &events,
        &[Expected::new("ADDED", &a), Expected::new("MODIFIED", &a2)],
        start,
    )
}

/// Reads until the server's Close frame and then the end of the connection, by `deadline`;
/// data messages before the Close are returned.
async fn until_server_close(watch: &mut WsWatch, deadline: Instant, what: &str) -> Result<Vec<WsRead>, CheckFailure> {
    let mut before = Vec::new();
    loop {
        match watch.read(deadline.saturating_duration_since(Instant::now())).await? {
            WsRead::Close => break,
            WsRead::Ended => {
                return Err(watch.failure(&format!(
                    "{what}: the connection ended without the server's Close frame (RFC 6455 §5.5.1: an endpoint answers a Close with a Close; kube-apiserver's handler ends with x/net/websocket's Conn.Close, which writes one)"
                )));
            }
            WsRead::TimedOut => return Err(watch.failure(&format!("{what}: the server did not close the WebSocket"))),
            data => before.push(data),
        }
    }
    match watch.read(deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(2))).await? {
        WsRead::Ended => Ok(before),
        WsRead::TimedOut => {
            Err(watch.failure(&format!("{what}: after its Close frame the server kept the connection open")))
        }
        other => {
            Err(watch.failure(&format!("{what}: expected the connection to end after the Close frame, got {other:?}")))
        }
    }
}

/// §2.5 / §5: at `timeoutSeconds` the server closes the socket (Close frame, then the
/// connection ends), after about that long.
pub async fn timeout_closes(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "websocket-timeout-closes");
    let origin = origin(target);
    let rv = fx.current_rv().await?;
    let mut watch = target
        .websocket_watch(&fx.watch_query(&format!("resourceVersion={rv}&timeoutSeconds=2")), &with_origin(&origin))
        .await?;
    let deadline = watch.sent_at + Duration::from_secs(8);
    let before = until_server_close(&mut watch, deadline, "timeoutSeconds=2").await?;
    let lasted = watch.sent_at.elapsed().as_secs_f64();
    if !before.is_empty() {
        return Err(watch.failure("nothing changed, yet the watch sent messages"));
    }
    if !(1.5..=5.0).contains(&lasted) {
        return Err(
            watch.failure(&format!("timeoutSeconds=2 but the server closed after {lasted:.2} s (accepted: 1.5–5 s)"))
        );
    }
    Ok(())
}

/// Sends the client's Close and reads until the server ends the connection (within 5 s);
/// events it sent before reading the Close may still arrive. Returns whether the server
/// answered with a Close frame of its own.
async fn close_and_wait(watch: &mut WsWatch) -> Result<bool, CheckFailure> {
    watch.close().await?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut answered = false;
    loop {
        match watch.read(deadline.saturating_duration_since(Instant::now())).await? {
            WsRead::Close => answered = true,
            WsRead::Ended => return Ok(answered),
            WsRead::TimedOut => {
                return Err(watch.failure("after the client's Close the server did not end the connection within 5 s"));
            }
            WsRead::Text(_) | WsRead::Binary(_) if !answered => {}
            other => return Err(watch.failure(&format!("after its Close frame the server sent {other:?}"))),
        }
    }
}

/// §2.5: the client's Close ends the watch: the server ends the connection, answering with
/// its own Close frame first (RFC 6455 §5.5.1; kube-apiserver's handler returns and
/// x/net/websocket's `Conn.Close` writes one), and a new watch afterwards works.
pub async fn client_close(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "websocket-client-close");
    let origin = origin(target);
    let start = fx.current_rv().await?;
    let query = format!("resourceVersion={start}&timeoutSeconds=30");
    let mut watch = target.websocket_watch(&fx.watch_query(&query), &with_origin(&origin)).await?;
    let a = fx.create("a", "1").await?;
    let read = watch.next_data(EVENT_TIMEOUT).await?;
    let first = json_event(&watch, read, target.resource.kind())?;
    expect_ws_events(&watch, "before the close", &[first], &[Expected::new("ADDED", &a)], start)?;
    let answered = close_and_wait(&mut watch).await?;

    let query = format!("resourceVersion={}&timeoutSeconds=30", crate::fixture::rv(&a));
    let mut again = target.websocket_watch(&fx.watch_query(&query), &with_origin(&origin)).await?;
    let a2 = fx.update(&a, "2").await?;
    let read = again.next_data(EVENT_TIMEOUT).await?;
    let event = json_event(&again, read, target.resource.kind())?;
    expect_ws_events(&again, "a watch opened after the close", &[event], &[Expected::new("MODIFIED", &a2)], 0)?;

    if !answered {
        return Err(watch.failure(
            "after the client's Close the server ended the connection without answering with a Close frame (RFC 6455 §5.5.1: an endpoint answers a Close with a Close; kube-apiserver's handler ends with x/net/websocket's Conn.Close, which writes one)",
        ));
    }
    Ok(())
}

/// The `apiserver_registered_watchers` samples for Leases (labels `group` and `kind` as in
/// listwatch and kube ≤ 1.3x, or `resource`), summed; None when the metric is not exposed.
fn lease_watchers(metrics: &str) -> Option<f64> {
    const NAME: &str = "apiserver_registered_watchers";
    let mut exposed = false;
    let mut sum = 0.0;
    for line in metrics.lines() {
        if line.starts_with('#') {
            exposed |= line.split_whitespace().nth(2) == Some(NAME);
            continue;
        }
        let Some(rest) = line.strip_prefix(NAME) else { continue };
        let (labels, value) = match rest.strip_prefix('{') {
            Some(rest) => match rest.split_once('}') {
                Some((labels, value)) => (labels, value),
                None => continue,
            },
            None if rest.starts_with(' ') => ("", rest),
            None => continue,
        };
        exposed = true;
        let labels = parse_labels(labels);
        let label = |name: &str| labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let lease = label("group") == Some("coordination.k8s.io")
            && (label("kind") == Some("Lease") || label("resource") == Some("leases"));
        if lease && let Some(value) = value.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()) {
            sum += value;
        }
    }
    exposed.then_some(sum)
}

/// `a="x",b="y"` → pairs (quoted values may hold commas and escaped quotes).
fn parse_labels(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut rest = text.trim();
    while let Some((name, after)) = rest.split_once('=') {
        let Some(after) = after.strip_prefix('"') else { break };
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        pairs.push((name.trim().trim_start_matches(',').trim().to_string(), value));
        rest = after[end..].trim_start_matches(',').trim();
    }
    pairs
}

/// Polls the Lease watcher gauge until `done` holds, for up to 5 s. Returns whether it did
/// and the last reading (None while `/metrics` does not expose the gauge: a Prometheus
/// registry leaves out a family none of whose series exists yet).
async fn wait_for_gauge(target: &Target, done: impl Fn(f64) -> bool) -> Result<(bool, Option<f64>), CheckFailure> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let response = target.get("/metrics").await?;
        let value =
            (response.status == 200).then(|| lease_watchers(&String::from_utf8_lossy(&response.body))).flatten();
        let met = value.is_some_and(&done);
        if met || Instant::now() >= deadline {
            return Ok((met, value));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// §2.5: a client's close unregisters the watch on the server, as `apiserver_registered_watchers`
/// shows. It watches Leases, a kind no other check watches, so the gauge moves only with this
/// check's watch. Skipped when `/metrics` does not expose the gauge (or it does not count
/// WebSocket watches).
pub async fn close_unregisters(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "websocket-close-unregisters");
    // Before any watch of the kind the family may be missing altogether: that reads as 0.
    let metrics = target.get("/metrics").await?;
    let before = lease_watchers(&String::from_utf8_lossy(&metrics.body)).unwrap_or(0.0);
    let origin = origin(target);
    let path = format!(
        "/apis/coordination.k8s.io/v1/namespaces/{}/leases?watch=1&labelSelector={}&timeoutSeconds=30",
        target.namespace,
        encode(&fx.selector())
    );
    let mut watch = target.websocket_watch(&path, &with_origin(&origin)).await?;
    let (counted, open) = wait_for_gauge(target, |v| v >= before + 1.0).await?;
    let Some(open) = open.filter(|_| counted) else {
        return Err(CheckFailure::skipped(match open {
            None => {
                "GET /metrics does not expose apiserver_registered_watchers, even with a Lease watch open".to_string()
            }
            Some(now) => format!(
                "apiserver_registered_watchers for Leases stayed at {now} (was {before}) with a WebSocket Lease watch open: the gauge does not count it"
            ),
        }));
    };
    watch.close().await?;
    let (freed, now) = wait_for_gauge(target, |v| v <= open - 1.0).await?;
    if !freed {
        return Err(watch.failure(&format!(
            "the client closed its WebSocket watch, but apiserver_registered_watchers for Leases is still {now:?} after 5 s (it was {open} with the watch open, {before} before)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WebSocket server on a local port that sends one text message, then waits for the
    /// client's Close and either answers it (as RFC 6455 asks) or just hangs up.
    async fn server(answer_close: bool) -> Target {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut socket = tokio_tungstenite::accept_async(tcp).await.unwrap();
            socket.send(Message::text("{}\n")).await.unwrap();
            while let Some(Ok(message)) = socket.next().await {
                if let Message::Close(_) = message {
                    break;
                }
            }
            if answer_close {
                // Sends the Close reply tungstenite queued on reading the client's.
                let _ = socket.flush().await;
            }
        });
        Target::new(&format!("http://{addr}")).unwrap()
    }

    #[tokio::test]
    async fn a_close_answered_with_a_close_is_told_apart_from_a_hang_up() {
        for answer_close in [true, false] {
            let target = server(answer_close).await;
            let mut watch = target.websocket_watch("/w", &with_origin("http://x")).await.unwrap();
            assert!(matches!(watch.next_data(Duration::from_secs(5)).await.unwrap(), WsRead::Text(_)));
            assert_eq!(close_and_wait(&mut watch).await.unwrap(), answer_close, "{}", watch.transcript());
        }
    }

    #[test]
    fn the_gauge_is_read_from_kube_and_listwatch_label_sets() {
        let listwatch = "# HELP apiserver_registered_watchers Number\n# TYPE apiserver_registered_watchers gauge\n\
            apiserver_registered_watchers{group=\"coordination.k8s.io\",version=\"v1\",kind=\"Lease\"} 2\n\
            apiserver_registered_watchers{group=\"\",version=\"v1\",kind=\"ConfigMap\"} 7\n";
        assert_eq!(lease_watchers(listwatch), Some(2.0));
        let kube = "apiserver_registered_watchers{group=\"coordination.k8s.io\",resource=\"leases\"} 1\n";
        assert_eq!(lease_watchers(kube), Some(1.0));
        assert_eq!(lease_watchers("# TYPE apiserver_registered_watchers gauge\n"), Some(0.0));
        assert_eq!(lease_watchers("apiserver_request_total{verb=\"GET\"} 3\n"), None);
        assert_eq!(
            parse_labels(r#"a="x,y",b="q\"z""#),
            [("a".to_string(), "x,y".to_string()), ("b".to_string(), "q\"z".to_string())]
        );
    }
}
