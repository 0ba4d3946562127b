//! The watch-guarantee checks judge what a server really delivered: against listwatch every
//! guarantee holds, and behind a proxy that drops or repeats one event of one watch they fail
//! with the guarantee that was broken, naming the client and the event, while the guarantees
//! that still held pass.
//!
//! `LISTWATCH_BIN` must name a built listwatch binary (see `against_listwatch.rs`).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use listwatch_conformance::{Outcome, Report, Target, all_checks};
use listwatch_testkit::server::{Backend, Server};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the proxy does to the one watch it sabotages.
#[derive(Clone, Copy, Debug)]
enum Sabotage {
    /// Leaves out its third change event.
    Drop,
    /// Sends its third change event twice.
    Repeat,
}

/// The change event (not a bookmark) the sabotage hits.
const HIT: usize = 3;

/// Runs the guarantee checks against a fresh listwatch, through a proxy doing `sabotage` when
/// given.
fn guarantees_through(sabotage: Option<Sabotage>) -> Report {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let server = Server::builder()
            .backend(Backend::Ephemeral)
            .args(["--bookmark-interval", "1s"])
            .rust_log(None)
            .echo_log(true)
            .start()
            .await;
        let url = match sabotage {
            Some(sabotage) => proxy(server.url.clone(), sabotage).await,
            None => server.url.clone(),
        };
        let target = Target::new(&url).expect("target");
        let names: Vec<String> = all_checks()
            .iter()
            .filter(|c| c.name.starts_with("watch-guarantee-"))
            .map(|c| c.name.to_string())
            .collect();
        let report = listwatch_conformance::run(&target, &names).await;
        println!("{sabotage:?}:\n{report}\n");
        report
    })
}

/// Starts a plain HTTP proxy to `upstream` that sabotages the first watch of the `selector`
/// client (a label selector, no streaming list); returns its URL.
async fn proxy(upstream: String, sabotage: Sabotage) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let armed = Arc::new(AtomicBool::new(true));
    let client = reqwest::Client::new();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let (upstream, armed, client) = (upstream.clone(), armed.clone(), client.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    forward(request, upstream.clone(), client.clone(), armed.clone(), sabotage)
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    url
}

async fn forward(
    request: Request<Incoming>,
    upstream: String,
    client: reqwest::Client,
    armed: Arc<AtomicBool>,
    sabotage: Sabotage,
) -> Result<Response<BoxBody<Bytes, BoxError>>, Infallible> {
    let path = request.uri().path_and_query().map(std::string::ToString::to_string).unwrap_or_default();
    let targeted = path.contains("watch=1") && path.contains("labelSelector") && !path.contains("sendInitialEvents");
    let hit = targeted && armed.swap(false, Ordering::SeqCst);
    let method = request.method().clone();
    let headers = request.headers().clone();
    let body = request.into_body().collect().await.map(http_body_util::Collected::to_bytes).unwrap_or_default();
    let mut outgoing = client.request(method, format!("{upstream}{path}")).body(body);
    for name in ["accept", "content-type", "authorization"] {
        if let Some(value) = headers.get(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    let response = match outgoing.send().await {
        Ok(response) => response,
        Err(e) => {
            let body = http_body_util::Full::new(Bytes::from(e.to_string())).map_err(|never| match never {}).boxed();
            return Ok(Response::builder().status(502).body(body).expect("a response"));
        }
    };
    let mut reply = Response::builder().status(response.status().as_u16());
    for (name, value) in response.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            reply = reply.header(name.as_str(), value.as_bytes());
        }
    }
    let chunks = response.bytes_stream().map(|chunk| chunk.map_err(BoxError::from));
    let body: BoxBody<Bytes, BoxError> = if hit {
        let mut lines = LineEditor { pending: Vec::new(), changes: 0, sabotage };
        let edited = chunks.map(move |chunk| chunk.map(|bytes| Frame::data(lines.edit(&bytes))));
        BodyExt::boxed(StreamBody::new(edited))
    } else {
        BodyExt::boxed(StreamBody::new(chunks.map(|chunk| chunk.map(Frame::data))))
    };
    Ok(reply.body(body).expect("a response"))
}

/// Re-frames a watch body into whole lines and drops or repeats the [`HIT`]th change event.
struct LineEditor {
    pending: Vec<u8>,
    changes: usize,
    sabotage: Sabotage,
}

impl LineEditor {
    fn edit(&mut self, chunk: &[u8]) -> Bytes {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(newline) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=newline).collect();
            let is_change = !String::from_utf8_lossy(&line).contains("\"type\":\"BOOKMARK\"");
            if is_change {
                self.changes += 1;
            }
            match (self.sabotage, is_change && self.changes == HIT) {
                (Sabotage::Drop, true) => {}
                (Sabotage::Repeat, true) => {
                    out.extend_from_slice(&line);
                    out.extend_from_slice(&line);
                }
                (_, false) => out.extend_from_slice(&line),
            }
        }
        Bytes::from(out)
    }
}

fn outcome<'a>(report: &'a Report, guarantee: &str) -> &'a Outcome {
    &report.get(&format!("watch-guarantee-{guarantee}")).unwrap_or_else(|| panic!("no {guarantee} check")).outcome
}

fn assert_failed_naming(report: &Report, guarantee: &str, expected_why: &str) {
    match outcome(report, guarantee) {
        Outcome::Failed { why, evidence: Some(evidence) } => {
            assert!(why.contains(expected_why), "{guarantee}: {why}");
            assert!(evidence.contains("client selector"), "{guarantee} names the sabotaged client:\n{evidence}");
        }
        other => panic!("{guarantee} should have failed with evidence, got {other:?}\n{report}"),
    }
}

fn assert_passed(report: &Report, guarantees: &[&str]) {
    for guarantee in guarantees {
        assert_eq!(outcome(report, guarantee), &Outcome::Passed, "{guarantee}\n{report}");
    }
}

#[test]
fn every_guarantee_holds_on_listwatch() {
    let report = guarantees_through(None);
    report.assert_all_passed_allowing_skips(&[]);
    assert_eq!(report.results.len(), 9);
}

#[test]
fn a_dropped_event_breaks_reliable_and_nothing_else_it_should_not() {
    let report = guarantees_through(Some(Sabotage::Drop));
    assert_failed_naming(&report, "reliable", "of the reliable guarantee");
    assert_passed(&report, &["ordered", "unique", "atomic", "bookmarkable", "initial-events-end"]);
}

#[test]
fn a_repeated_event_breaks_unique_and_nothing_else_it_should_not() {
    let report = guarantees_through(Some(Sabotage::Repeat));
    assert_failed_naming(&report, "unique", "of the unique guarantee");
    assert_passed(&report, &["ordered", "atomic", "reliable", "resumable", "bookmarkable", "converged"]);
}
