//! `/metrics` in Prometheus text format, with kube-apiserver's metric names where it has one.
//!
//! Request and watch-stream metrics are counted where they happen; the watch caches' figures
//! (terminated watchers, window size, objects) are read from the caches at scrape time.
//!
//! Our own metrics (prefix `listwatch_`): undecodable stored values, the watch cache's window,
//! and `listwatch_request_panics_total{stage}`, the panics the last-resort guard caught (a
//! handler answered 500, or a response stream ended early): always 0 unless there is a bug.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::LazyLock;

use listwatch_meta::Resource;
use parking_lot::Mutex;
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder};

use crate::registry::ResourceStore;

struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    request_duration: HistogramVec,
    registered_watchers: IntGaugeVec,
    watch_events: IntCounterVec,
    watch_event_sizes: HistogramVec,
    terminated_watchers: IntCounterVec,
    cache_initializations: IntCounterVec,
    undecodable: IntCounterVec,
    consistent_reads: IntCounterVec,
    cache_lists: IntCounterVec,
    storage_objects: IntGaugeVec,
    cache_window_events: IntGaugeVec,
    cache_window_oldest: IntGaugeVec,
    cache_resource_version: IntGaugeVec,
    current_inflight: IntGaugeVec,
    panics: IntCounterVec,
    /// Counters mirrored from the caches: the last value seen, to add only the difference.
    mirrored: Mutex<HashMap<(String, &'static str), u64>>,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry.register(Box::new(c.clone())).expect("unique metric");
    c
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry.register(Box::new(g.clone())).expect("unique metric");
    g
}

fn histogram(registry: &Registry, name: &str, help: &str, labels: &[&str], buckets: Vec<f64>) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels).expect("valid metric");
    registry.register(Box::new(h.clone())).expect("unique metric");
    h
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let r = Registry::new();
    let request_labels = &["verb", "group", "version", "resource", "subresource", "scope", "component", "code"];
    let metrics = Metrics {
        requests: counter(
            &r,
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, group, version, resource, scope, component, and HTTP response code.",
            request_labels,
        ),
        request_duration: histogram(
            &r,
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version, resource, subresource, scope and component.",
            &request_labels[..7],
            vec![
                0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0,
                20.0, 30.0, 45.0, 60.0,
            ],
        ),
        registered_watchers: gauge(
            &r,
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            &["group", "version", "kind"],
        ),
        watch_events: counter(
            &r,
            "apiserver_watch_events_total",
            "Number of events sent in watch clients",
            &["group", "version", "kind"],
        ),
        watch_event_sizes: histogram(
            &r,
            "apiserver_watch_events_sizes",
            "Watch event size distribution in bytes (the sum is the bytes sent)",
            &["group", "version", "kind"],
            prometheus::exponential_buckets(1024.0, 2.0, 8).expect("buckets"),
        ),
        terminated_watchers: counter(
            &r,
            "apiserver_terminated_watchers_total",
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            &["group", "resource"],
        ),
        cache_initializations: counter(
            &r,
            "apiserver_watch_cache_initializations_total",
            "Counter of watch cache initializations broken by resource type.",
            &["group", "resource"],
        ),
        consistent_reads: counter(
            &r,
            "apiserver_watch_cache_consistent_read_total",
            "Counter for consistent reads from cache.",
            &["resource", "success", "fallback"],
        ),
        cache_lists: counter(
            &r,
            "apiserver_cache_list_total",
            "Number of LIST requests served from watch cache",
            &["resource_prefix", "index"],
        ),
        undecodable: counter(
            &r,
            "listwatch_storage_undecodable_objects_total",
            "Stored values skipped because they could not be decoded.",
            &["resource"],
        ),
        storage_objects: gauge(
            &r,
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            &["resource"],
        ),
        cache_window_events: gauge(
            &r,
            "listwatch_watch_cache_window_events",
            "Events held in the watch cache's window.",
            &["group", "resource"],
        ),
        cache_window_oldest: gauge(
            &r,
            "listwatch_watch_cache_window_oldest_resource_version",
            "Oldest resourceVersion a watch can start from in the cache.",
            &["group", "resource"],
        ),
        cache_resource_version: gauge(
            &r,
            "apiserver_watch_cache_resource_version",
            "Current resource version of watch cache broken by resource type.",
            &["group", "resource"],
        ),
        current_inflight: gauge(
            &r,
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            &["request_kind"],
        ),
        panics: counter(
            &r,
            "listwatch_request_panics_total",
            "Panics caught while serving a request (stage: handler, stream, websocket); each is a bug.",
            &["stage"],
        ),
        mirrored: Mutex::new(HashMap::new()),
        registry: r,
    };
    // Shown at 0 from the start, so a scrape can tell "no panic" from "not counted".
    for stage in ["handler", "stream", "websocket"] {
        metrics.panics.with_label_values(&[stage]);
    }
    metrics
});

fn scope(namespaced: bool, namespace: bool, name: bool) -> &'static str {
    match (namespaced, namespace, name) {
        (_, _, true) => "resource",
        (true, true, false) => "namespace",
        _ => "cluster",
    }
}

/// Counts a finished API request.
#[allow(clippy::too_many_arguments)]
pub fn request(
    verb: &str,
    resource: Option<&Resource>,
    subresource: &str,
    namespace: bool,
    name: bool,
    code: u16,
    seconds: f64,
) {
    let (group, version, plural, namespaced) = match resource {
        Some(r) => (r.group, r.version, r.plural, r.namespaced),
        None => ("", "", "", false),
    };
    let scope = scope(namespaced, namespace, name);
    let code = code.to_string();
    METRICS.requests.with_label_values(&[verb, group, version, plural, subresource, scope, "apiserver", &code]).inc();
    METRICS
        .request_duration
        .with_label_values(&[verb, group, version, plural, subresource, scope, "apiserver"])
        .observe(seconds);
}

/// The in-flight gauge of `kind` (`readOnly` or `mutating`), which the max-in-flight filter
/// moves as it admits and finishes requests (the current count, not kube's per-second maximum).
pub fn current_inflight(kind: &str) -> prometheus::IntGauge {
    METRICS.current_inflight.with_label_values(&[kind])
}

/// Counts a panic caught by the last-resort guard (`crate::panics`).
pub fn request_panicked(stage: &str) {
    METRICS.panics.with_label_values(&[stage]).inc();
}

pub fn watcher_registered(resource: &Resource, delta: i64) {
    METRICS.registered_watchers.with_label_values(&[resource.group, resource.version, resource.kind]).add(delta);
}

/// The sent-event metrics of one watch, looked up once: the hot path then counts without a
/// label lookup per event.
pub struct WatchEventMetrics {
    events: prometheus::IntCounter,
    sizes: prometheus::Histogram,
}

impl WatchEventMetrics {
    pub fn for_resource(resource: &Resource) -> WatchEventMetrics {
        let labels = [resource.group, resource.version, resource.kind];
        WatchEventMetrics {
            events: METRICS.watch_events.with_label_values(&labels),
            sizes: METRICS.watch_event_sizes.with_label_values(&labels),
        }
    }

    pub fn sent(&self, bytes: usize) {
        self.events.inc();
        self.sizes.observe(bytes as f64);
    }
}

/// A consistent LIST tried from the cache: served by it (`success`), or by storage after it.
pub fn consistent_read(resource: &Resource, success: bool) {
    let labels = [resource.plural, if success { "true" } else { "false" }, if success { "false" } else { "true" }];
    METRICS.consistent_reads.with_label_values(&labels).inc();
}

/// A LIST (or one page of it) served from the watch cache: its latest state or, for continue
/// pages and `Exact`, a past revision in its window.
pub fn list_from_cache(resource_prefix: &str) {
    METRICS.cache_lists.with_label_values(&[resource_prefix, ""]).inc();
}

pub fn undecodable_object(resource: &str) {
    METRICS.undecodable.with_label_values(&[resource]).inc();
}

fn mirror(counter: &IntCounterVec, labels: &[&str], key: (String, &'static str), value: u64) {
    let mut seen = METRICS.mirrored.lock();
    let last = seen.entry(key).or_insert(0);
    if value > *last {
        counter.with_label_values(labels).inc_by(value - *last);
        *last = value;
    }
}

/// The text exposition of every metric.
pub async fn render<'a>(stores: impl Iterator<Item = &'a Arc<ResourceStore>>) -> Vec<u8> {
    for store in stores {
        let r = store.resource;
        let labels = [r.group, r.plural];
        let resource_label =
            if r.group.is_empty() { r.plural.to_string() } else { format!("{}.{}", r.plural, r.group) };
        match &store.cache {
            Some(cache) => {
                let stats = cache.stats();
                mirror(
                    &METRICS.terminated_watchers,
                    &labels,
                    (resource_label.clone(), "terminated"),
                    stats.terminated_watchers,
                );
                mirror(&METRICS.cache_initializations, &labels, (resource_label.clone(), "relists"), stats.relists);
                mirror(
                    &METRICS.undecodable,
                    &[r.plural],
                    (resource_label.clone(), "undecodable"),
                    stats.undecodable_objects,
                );
                METRICS.storage_objects.with_label_values(&[&resource_label]).set(stats.objects as i64);
                METRICS.cache_window_events.with_label_values(&labels).set(stats.window_events as i64);
                METRICS.cache_window_oldest.with_label_values(&labels).set(stats.window_oldest_resource_version);
                METRICS.cache_resource_version.with_label_values(&labels).set(stats.resource_version);
            }
            None => {
                let prefix = store.prefix(None);
                let request =
                    listwatch_storage::RangeRequest::new(listwatch_storage::KeyRange::prefix(prefix)).count_only();
                if let Ok(counted) = store.storage.range(request).await {
                    METRICS.storage_objects.with_label_values(&[&resource_label]).set(counted.count);
                }
            }
        }
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&METRICS.registry.gather(), &mut out).expect("text encoding of metrics");
    out
}
