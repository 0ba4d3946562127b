//! Storage's own change log during a run, read from a server's
//! `/debug/listwatch/history` stream (a storage watch of every key, one JSON line per
//! revision). It is what the checker holds every client's deliveries against: the truth is
//! what storage applied, not what the writer believes it wrote. When the stream breaks (a
//! server restart, a storage outage) the reader reconnects, to any server, from the last
//! revision it has.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use http::Method;
use http_body_util::BodyExt;
use listwatch_client::Client;
use listwatch_simulator::record::HistoryEvent;
use tokio::sync::watch;

/// The history read so far.
#[derive(Default)]
pub struct History {
    /// The changes, in revision order.
    pub events: Vec<HistoryEvent>,
    /// When each change was read, in milliseconds from the start (a little after storage
    /// applied it).
    pub arrived_ms: Vec<u64>,
    /// Times the stream broke and was reopened.
    pub reconnects: usize,
}

impl History {
    /// The last revision read (0 before any).
    pub fn revision(&self) -> i64 {
        self.events.last().map_or(0, |e| e.revision)
    }
}

/// Reads the history through `servers` (tried in turn after a break) until `stop` turns true.
/// With `objects`, each Put carries its stored object (for a record that can be replayed).
pub async fn follow(
    servers: Vec<Client>,
    history: Arc<Mutex<History>>,
    started: Instant,
    objects: bool,
    mut stop: watch::Receiver<bool>,
) {
    let mut server = 0;
    loop {
        if *stop.borrow() {
            return;
        }
        let from = history.lock().expect("history lock").revision();
        let read = read_from(&servers[server % servers.len()], from, objects, &history, started);
        tokio::select! {
            _ = read => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        history.lock().expect("history lock").reconnects += 1;
        server += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One connection's worth of history after revision `from`; returns when the stream ends.
async fn read_from(server: &Client, from: i64, objects: bool, history: &Mutex<History>, started: Instant) {
    let path = format!("/debug/listwatch/history?resourceVersion={from}&objects={objects}");
    let Ok(response) = server.request_stream(Method::GET, &path, "application/json").await else { return };
    let mut body = response.into_body();
    let mut buffer = BytesMut::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else { continue };
        buffer.extend_from_slice(&data);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line = buffer.split_to(end + 1);
            match serde_json::from_slice::<HistoryEvent>(&line[..end]) {
                Ok(event) => {
                    let mut history = history.lock().expect("history lock");
                    // After a reconnect the server starts after `from`: never a repeat.
                    if event.revision > history.revision() {
                        history.events.push(event);
                        history.arrived_ms.push(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
                    }
                }
                Err(e) => tracing::warn!(error = %e, "an unreadable history line"),
            }
        }
        if buffer.remaining() > 1 << 20 {
            return;
        }
    }
}
