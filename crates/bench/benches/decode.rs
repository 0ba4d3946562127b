//! Decoding one watch event of a ~1 KiB pod into a typed struct (the reflector bench's pod,
//! `examples/reflector_bench/shared.rs`): the client's decoder against plain serde_json.
//!
//! ```sh
//! cargo bench -p listwatch-bench --bench decode
//! ```
//!
//! * `client`: [`decode_json_event`], as the watch stream decodes every event (UTF-8 checked
//!   once, then serde_json from the `str` through the layer that keeps one-element `Vec`s
//!   without spare room).
//! * `serde_json`: the same bytes checked as UTF-8, then `serde_json::from_str` into a derived
//!   `{type, object}` struct: what decoding costs without the layer (the difference is the
//!   layer's price).
//!
//! Each iteration also drops the decoded pod, as a cache drops the object an update replaces.
//!
//! * `into_store_10000`: the same events for 10,000 pods (names `bench-ac51-0` ...), decoded
//!   round-robin with the client's decoder and put into a [`Store`] holding those 10,000 pods:
//!   each insert drops a pod last touched 10,000 events earlier, as in the reflector bench
//!   (`scripts/bench-reflector.sh`), without the network, the framing and the reflector: the
//!   most a reflector can do per core with this struct.

// `criterion_group!` defines a public function with no place for a doc comment; a bench has no
// API to document.
#![allow(missing_docs)]

#[path = "../examples/reflector_bench/pod.rs"]
mod pod;
#[allow(dead_code)]
#[path = "../examples/reflector_bench/shared.rs"]
mod shared;

use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;

use listwatch_client::Store;
use listwatch_client::event::{WatchEvent, decode_json_event};
use serde::Deserialize;

use pod::Pod;

/// A MODIFIED event of a pod as `listwatch bench create` and the update driver write them.
const EVENT: &str = r#"{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bench-ac51-0","namespace":"rbench","uid":"09ace488-e32b-49ac-b271-ea4319d62e8a","resourceVersion":"40011","generation":1,"creationTimestamp":"2026-11-24T07:02:55Z","labels":{"app":"bench-web","pod-template-hash":"6b7f9c8d5d"},"annotations":{"bench.listwatch.dev/padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","bench.listwatch.dev/round":"000002"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"bench-web-6b7f9c8d5d","uid":"35b6e18d-cdd8-4be5-9c73-5b5d27fab044","controller":true,"blockOwnerDeletion":true}]},"spec":{"containers":[{"name":"web","image":"registry.k8s.io/nginx-slim:0.27","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}},"imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","schedulerName":"default-scheduler","priority":0},"status":{"phase":"Pending","qosClass":"BestEffort"}}}"#;

#[derive(Deserialize)]
struct PlainEvent {
    #[allow(dead_code)]
    r#type: String,
    object: Pod,
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_pod_event");
    group.bench_function("client", |b| {
        b.iter(|| match decode_json_event::<Pod>(EVENT.as_bytes()).unwrap() {
            WatchEvent::Modified(pod) => pod,
            other => panic!("{other:?}"),
        });
    });
    group.bench_function("serde_json", |b| {
        b.iter(|| {
            let text = std::str::from_utf8(std::hint::black_box(EVENT.as_bytes())).unwrap();
            serde_json::from_str::<PlainEvent>(text).unwrap().object
        });
    });
    const PODS: usize = 10_000;
    let events: Vec<String> = (0..PODS).map(|i| EVENT.replace("bench-ac51-0", &format!("bench-ac51-{i}"))).collect();
    let store: Store<Pod> = Store::new();
    let decode = |event: &String| match decode_json_event::<Pod>(event.as_bytes()).unwrap() {
        WatchEvent::Modified(pod) => Arc::new(pod),
        other => panic!("{other:?}"),
    };
    for event in &events {
        store.insert(decode(event));
    }
    let mut next = 0;
    group.bench_function("into_store_10000", |b| {
        b.iter(|| {
            let pod = decode(&events[next]);
            next = (next + 1) % PODS;
            drop(store.insert(pod));
        });
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
