//! The queue's metrics, under client-go's names, behind a provider a program chooses.
//!
//! client-go's queue does not talk to Prometheus: it asks a `MetricsProvider` for seven metric
//! handles per queue name and pokes them. We keep that split so a program decides whether and where
//! the figures go:
//!
//! * [`MetricsProvider`] hands out one handle per metric for a queue name; the handle traits
//!   ([`GaugeMetric`], [`SettableGaugeMetric`], [`CounterMetric`], [`HistogramMetric`]) are the
//!   only operations the queue needs.
//! * [`NoopMetricsProvider`] is the default: queues built with it keep no bookkeeping at all and
//!   start no background ticker, as in client-go.
//! * [`PrometheusMetricsProvider`] makes the component-base families (`workqueue_depth`,
//!   `workqueue_adds_total`, `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
//!   `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`,
//!   `workqueue_retries_total`), each labelled `name`, with the same help texts and histogram
//!   buckets (1 µs to 1000 s, ×10), ready to be registered in a [`prometheus::Registry`].
//!
//! A queue with an empty name records nothing, whatever the provider: client-go's rule, so
//! anonymous helper queues don't create `name=""` series that collide with each other.
//!
//! `QueueMetrics` (private) is the per-queue bookkeeping (when each key was added and when its processing
//! started) that turns queue events into these figures; the queue calls it under its own lock.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
};
use tokio::time::Instant;

/// How often a queue with metrics refreshes `workqueue_unfinished_work_seconds` and
/// `workqueue_longest_running_processor_seconds` (client-go's `defaultUnfinishedWorkUpdatePeriod`).
pub const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// A value that moves up and down by one: the queue's depth.
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A value that is set outright: the unfinished-work figures.
pub trait SettableGaugeMetric: Send + Sync {
    /// Replaces the value.
    fn set(&self, value: f64);
}

/// A value that only grows: adds and retries.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observations in seconds: time queued and time processing.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// Makes the metric handles for one queue, by the queue's name (client-go's `MetricsProvider`).
///
/// Each method is called once per named queue when the queue is built.
pub trait MetricsProvider: Send + Sync {
    /// `workqueue_depth`: items waiting to be handed out.
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric>;
    /// `workqueue_adds_total`: adds that were not collapsed into a pending add.
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// `workqueue_queue_duration_seconds`: from add to being handed out by `get`.
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_work_duration_seconds`: from `get` to `done`.
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_unfinished_work_seconds`: summed age of the items being processed now.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_longest_running_processor_seconds`: age of the oldest item being processed now.
    fn new_longest_running_processor_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_retries_total`: calls to `add_after` (and so `add_rate_limited`).
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric>;

    /// True when the handles would discard everything. Queues then skip the per-key
    /// bookkeeping and the unfinished-work ticker altogether, as client-go does for its no-op
    /// provider.
    fn is_noop(&self) -> bool {
        false
    }
}

/// The default provider: records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopMetricsProvider;

/// The handle [`NoopMetricsProvider`] hands out for every metric.
struct NoopMetric;

impl GaugeMetric for NoopMetric {
    fn inc(&self) {}
    fn dec(&self) {}
}

impl SettableGaugeMetric for NoopMetric {
    fn set(&self, _value: f64) {}
}

impl CounterMetric for NoopMetric {
    fn inc(&self) {}
}

impl HistogramMetric for NoopMetric {
    fn observe(&self, _value: f64) {}
}

impl MetricsProvider for NoopMetricsProvider {
    fn new_depth_metric(&self, _name: &str) -> Box<dyn GaugeMetric> {
        Box::new(NoopMetric)
    }
    fn new_adds_metric(&self, _name: &str) -> Box<dyn CounterMetric> {
        Box::new(NoopMetric)
    }
    fn new_latency_metric(&self, _name: &str) -> Box<dyn HistogramMetric> {
        Box::new(NoopMetric)
    }
    fn new_work_duration_metric(&self, _name: &str) -> Box<dyn HistogramMetric> {
        Box::new(NoopMetric)
    }
    fn new_unfinished_work_seconds_metric(&self, _name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(NoopMetric)
    }
    fn new_longest_running_processor_seconds_metric(&self, _name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(NoopMetric)
    }
    fn new_retries_metric(&self, _name: &str) -> Box<dyn CounterMetric> {
        Box::new(NoopMetric)
    }
    fn is_noop(&self) -> bool {
        true
    }
}

// The Prometheus handle types already have these operations; the impls only name them.

impl GaugeMetric for IntGauge {
    fn inc(&self) {
        IntGauge::inc(self);
    }
    fn dec(&self) {
        IntGauge::dec(self);
    }
}

impl SettableGaugeMetric for prometheus::Gauge {
    fn set(&self, value: f64) {
        prometheus::Gauge::set(self, value);
    }
}

impl CounterMetric for IntCounter {
    fn inc(&self) {
        IntCounter::inc(self);
    }
}

impl HistogramMetric for Histogram {
    fn observe(&self, value: f64) {
        Histogram::observe(self, value);
    }
}

/// Metric names as component-base registers them (subsystem `workqueue`).
pub mod names {
    /// Gauge of items waiting to be handed out.
    pub const DEPTH: &str = "workqueue_depth";
    /// Counter of adds.
    pub const ADDS: &str = "workqueue_adds_total";
    /// Histogram of seconds from add to `get`.
    pub const QUEUE_DURATION: &str = "workqueue_queue_duration_seconds";
    /// Histogram of seconds from `get` to `done`.
    pub const WORK_DURATION: &str = "workqueue_work_duration_seconds";
    /// Gauge of summed seconds of in-flight processing.
    pub const UNFINISHED_WORK: &str = "workqueue_unfinished_work_seconds";
    /// Gauge of seconds of the oldest in-flight processing.
    pub const LONGEST_RUNNING_PROCESSOR: &str = "workqueue_longest_running_processor_seconds";
    /// Counter of delayed (retried) adds.
    pub const RETRIES: &str = "workqueue_retries_total";
}

/// The upper bounds of both histograms: `ExponentialBuckets(10e-7, 10, 10)` in component-base, i.e.
/// 1 µs, 10 µs, … 1000 s, computed by the same repeated multiplication so the bounds print alike.
pub fn duration_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(10e-7, 10.0, 10).expect("constant bucket layout is valid")
}

/// Publishes queue metrics as the component-base Prometheus families, labelled `name`.
///
/// Build one, [`register`](Self::register) it in the program's registry, and pass it (as
/// `Arc<dyn MetricsProvider>`) to every queue that should report; each named queue becomes one
/// series per family. Clones share the same families.
#[derive(Clone, Debug)]
pub struct PrometheusMetricsProvider {
    depth: IntGaugeVec,
    adds: IntCounterVec,
    queue_duration: HistogramVec,
    work_duration: HistogramVec,
    unfinished_work: GaugeVec,
    longest_running_processor: GaugeVec,
    retries: IntCounterVec,
}

impl Default for PrometheusMetricsProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl PrometheusMetricsProvider {
    /// Creates the seven families, not yet registered anywhere.
    pub fn new() -> Self {
        const LABELS: &[&str] = &["name"];
        // The options are constants known to be valid, so construction cannot fail.
        let valid = "constant metric options are valid";
        PrometheusMetricsProvider {
            depth: IntGaugeVec::new(Opts::new(names::DEPTH, "Current depth of workqueue"), LABELS).expect(valid),
            adds: IntCounterVec::new(Opts::new(names::ADDS, "Total number of adds handled by workqueue"), LABELS)
                .expect(valid),
            queue_duration: HistogramVec::new(
                HistogramOpts::new(
                    names::QUEUE_DURATION,
                    "How long in seconds an item stays in workqueue before being requested.",
                )
                .buckets(duration_buckets()),
                LABELS,
            )
            .expect(valid),
            work_duration: HistogramVec::new(
                HistogramOpts::new(
                    names::WORK_DURATION,
                    "How long in seconds processing an item from workqueue takes.",
                )
                .buckets(duration_buckets()),
                LABELS,
            )
            .expect(valid),
            unfinished_work: GaugeVec::new(
                Opts::new(
                    names::UNFINISHED_WORK,
                    "How many seconds of work has done that is in progress and hasn't been observed by \
                     work_duration. Large values indicate stuck threads. One can deduce the number of stuck \
                     threads by observing the rate at which this increases.",
                ),
                LABELS,
            )
            .expect(valid),
            longest_running_processor: GaugeVec::new(
                Opts::new(
                    names::LONGEST_RUNNING_PROCESSOR,
                    "How many seconds has the longest running processor for workqueue been running.",
                ),
                LABELS,
            )
            .expect(valid),
            retries: IntCounterVec::new(
                Opts::new(names::RETRIES, "Total number of retries handled by workqueue"),
                LABELS,
            )
            .expect(valid),
        }
    }

    /// Registers the seven families in `registry`. Fails if the registry already has families with
    /// these names (for example when a second provider is registered in the same registry).
    pub fn register(&self, registry: &prometheus::Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.depth.clone()))?;
        registry.register(Box::new(self.adds.clone()))?;
        registry.register(Box::new(self.queue_duration.clone()))?;
        registry.register(Box::new(self.work_duration.clone()))?;
        registry.register(Box::new(self.unfinished_work.clone()))?;
        registry.register(Box::new(self.longest_running_processor.clone()))?;
        registry.register(Box::new(self.retries.clone()))?;
        Ok(())
    }
}

impl MetricsProvider for PrometheusMetricsProvider {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(self.depth.with_label_values(&[name]))
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.adds.with_label_values(&[name]))
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.queue_duration.with_label_values(&[name]))
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.work_duration.with_label_values(&[name]))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.unfinished_work.with_label_values(&[name]))
    }
    fn new_longest_running_processor_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.longest_running_processor.with_label_values(&[name]))
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.retries.with_label_values(&[name]))
    }
}

/// Whether a queue with this name and provider records metrics at all.
fn records(name: &str, provider: &dyn MetricsProvider) -> bool {
    !name.is_empty() && !provider.is_noop()
}

/// The retries counter of a delaying queue, or `None` when the queue records no metrics.
pub(crate) fn retries_metric(name: &str, provider: &Arc<dyn MetricsProvider>) -> Option<Box<dyn CounterMetric>> {
    records(name, provider.as_ref()).then(|| provider.new_retries_metric(name))
}

/// Per-queue bookkeeping behind the metrics (client-go's `defaultQueueMetrics`).
///
/// The queue calls it under its own lock at each transition, so the maps always agree with the
/// queue's sets: a key has an add time while it is dirty and not yet handed out, and a start time
/// while it is processing.
pub(crate) struct QueueMetrics<K> {
    depth: Box<dyn GaugeMetric>,
    adds: Box<dyn CounterMetric>,
    queue_duration: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished_work_seconds: Box<dyn SettableGaugeMetric>,
    longest_running_processor_seconds: Box<dyn SettableGaugeMetric>,
    added_at: HashMap<K, Instant>,
    processing_since: HashMap<K, Instant>,
}

impl<K: Clone + Eq + Hash> QueueMetrics<K> {
    /// The bookkeeping for a queue, or `None` when the queue records no metrics.
    pub(crate) fn new(name: &str, provider: &Arc<dyn MetricsProvider>) -> Option<Self> {
        records(name, provider.as_ref()).then(|| QueueMetrics {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            queue_duration: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor_seconds: provider.new_longest_running_processor_seconds_metric(name),
            added_at: HashMap::new(),
            processing_since: HashMap::new(),
        })
    }

    /// A key became dirty. Depth counts dirty keys, so a key re-added while processing counts
    /// now although it is queued only at `done` (client-go does the same).
    pub(crate) fn add(&mut self, key: &K) {
        self.adds.inc();
        self.depth.inc();
        self.added_at.entry(key.clone()).or_insert_with(Instant::now);
    }

    /// A key was handed out by `get`.
    pub(crate) fn get(&mut self, key: &K) {
        let now = Instant::now();
        self.depth.dec();
        self.processing_since.insert(key.clone(), now);
        if let Some(added) = self.added_at.remove(key) {
            self.queue_duration.observe(now.saturating_duration_since(added).as_secs_f64());
        }
    }

    /// A key's processing finished.
    pub(crate) fn done(&mut self, key: &K) {
        if let Some(started) = self.processing_since.remove(key) {
            self.work_duration.observe(started.elapsed().as_secs_f64());
        }
    }

    /// Refreshes the two in-flight gauges; called every [`UNFINISHED_WORK_UPDATE_PERIOD`] because
    /// in-flight time grows without any queue event to hook.
    pub(crate) fn update_unfinished_work(&mut self) {
        let now = Instant::now();
        let mut total = 0.0;
        let mut oldest = 0.0_f64;
        for started in self.processing_since.values() {
            let age = now.saturating_duration_since(*started).as_secs_f64();
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor_seconds.set(oldest);
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{Encoder, Registry, TextEncoder};

    use super::*;
    use crate::{DelayingQueue, QueueConfig, RateLimitingQueue, WorkQueue, default_controller_rate_limiter};

    const SECOND: Duration = Duration::from_secs(1);

    /// Moves paused time forward and lets the queue's tasks run.
    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
    }

    fn provider() -> (Arc<PrometheusMetricsProvider>, Registry) {
        let registry = Registry::new();
        let provider = PrometheusMetricsProvider::new();
        provider.register(&registry).unwrap();
        (Arc::new(provider), registry)
    }

    fn config(name: &str, provider: &Arc<PrometheusMetricsProvider>) -> QueueConfig {
        QueueConfig::named(name).with_metrics_provider(provider.clone())
    }

    /// (count, sum) of a histogram series.
    fn histogram(vec: &HistogramVec, name: &str) -> (u64, f64) {
        let histogram = vec.with_label_values(&[name]);
        (histogram.get_sample_count(), histogram.get_sample_sum())
    }

    #[tokio::test(start_paused = true)]
    async fn queue_events_produce_client_gos_figures() {
        let (metrics, _registry) = provider();
        let queue = WorkQueue::with_config(config("q", &metrics));
        let depth = || metrics.depth.with_label_values(&["q"]).get();
        let adds = || metrics.adds.with_label_values(&["q"]).get();

        queue.add("a");
        queue.add("b");
        queue.add("a"); // collapsed: not an add
        assert_eq!((adds(), depth()), (2, 2));

        advance(2 * SECOND).await;
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(depth(), 1);
        assert_eq!(histogram(&metrics.queue_duration, "q"), (1, 2.0));

        advance(3 * SECOND).await;
        queue.done(&"a");
        assert_eq!(histogram(&metrics.work_duration, "q"), (1, 3.0));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(histogram(&metrics.queue_duration, "q"), (2, 7.0));
        assert_eq!(depth(), 0);

        // Re-added while processing: counted as an add and in the depth at once, although it is
        // queued only at `done` (client-go counts dirty keys).
        advance(SECOND).await;
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        queue.add("a");
        assert_eq!((adds(), depth(), queue.len()), (4, 1, 0));

        // In flight: b since 5 s, a since 6 s. The 500 ms ticker refreshes the gauges.
        advance(SECOND).await;
        assert_eq!(metrics.unfinished_work.with_label_values(&["q"]).get(), 3.0);
        assert_eq!(metrics.longest_running_processor.with_label_values(&["q"]).get(), 2.0);

        queue.done(&"b");
        queue.done(&"a");
        assert_eq!(histogram(&metrics.work_duration, "q"), (3, 3.0 + 2.0 + 1.0));
        advance(SECOND / 2).await;
        assert_eq!(metrics.unfinished_work.with_label_values(&["q"]).get(), 0.0);
        assert_eq!(metrics.longest_running_processor.with_label_values(&["q"]).get(), 0.0);
        // "a" was re-queued by `done`; its wait counts from the add during processing.
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(histogram(&metrics.queue_duration, "q"), (4, 7.0 + 0.0 + 1.5));
        assert_eq!(depth(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn every_add_after_counts_as_a_retry() {
        let (metrics, _registry) = provider();
        let retries = || metrics.retries.with_label_values(&["delayed"]).get();
        let queue = DelayingQueue::with_config(config("delayed", &metrics));
        queue.add_after("a", Duration::ZERO);
        queue.add_after("b", SECOND);
        queue.add_after("b", 2 * SECOND); // kept the earlier deadline, still a retry
        assert_eq!(retries(), 3);
        queue.add("c"); // a plain add is not a retry
        assert_eq!(retries(), 3);

        let limited = RateLimitingQueue::with_config(default_controller_rate_limiter(), config("limited", &metrics));
        limited.add_rate_limited("a");
        limited.add_rate_limited("a");
        assert_eq!(metrics.retries.with_label_values(&["limited"]).get(), 2);

        queue.shut_down();
        queue.add_after("d", SECOND); // ignored after shutdown, so not counted
        assert_eq!(retries(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unnamed_queue_records_nothing() {
        let (metrics, registry) = provider();
        let queue = DelayingQueue::with_config(config("", &metrics));
        queue.add_after("a", Duration::ZERO);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert!(registry.gather().is_empty(), "series were created for an unnamed queue");
    }

    #[tokio::test(start_paused = true)]
    async fn the_exposition_uses_client_gos_names_labels_and_buckets() {
        let (metrics, registry) = provider();
        let queue = DelayingQueue::with_config(config("pods", &metrics));
        queue.add_after("a", Duration::ZERO);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        advance(SECOND).await;

        let mut text = Vec::new();
        TextEncoder::new().encode(&registry.gather(), &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        for line in [
            "# TYPE workqueue_depth gauge",
            "workqueue_depth{name=\"pods\"} 0",
            "# TYPE workqueue_adds_total counter",
            "workqueue_adds_total{name=\"pods\"} 1",
            "# TYPE workqueue_queue_duration_seconds histogram",
            "# TYPE workqueue_work_duration_seconds histogram",
            "workqueue_work_duration_seconds_count{name=\"pods\"} 1",
            "# TYPE workqueue_unfinished_work_seconds gauge",
            "workqueue_unfinished_work_seconds{name=\"pods\"} 0",
            "# TYPE workqueue_longest_running_processor_seconds gauge",
            "workqueue_longest_running_processor_seconds{name=\"pods\"} 0",
            "# TYPE workqueue_retries_total counter",
            "workqueue_retries_total{name=\"pods\"} 1",
            concat!(
                "# HELP workqueue_queue_duration_seconds ",
                "How long in seconds an item stays in workqueue before being requested."
            ),
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        let bounds: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("workqueue_queue_duration_seconds_bucket"))
            .map(|l| l.split("le=\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert_eq!(bounds.len(), 11, "10 buckets and +Inf");
        assert_eq!(bounds.last(), Some(&"+Inf"));
    }

    #[test]
    fn histogram_buckets_are_1us_to_1000s_by_tens() {
        let buckets = duration_buckets();
        let expected = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];
        assert_eq!(buckets.len(), expected.len());
        for (got, want) in buckets.iter().zip(expected) {
            assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
        }
    }

    #[test]
    fn queues_without_metrics_need_no_runtime() {
        // No provider, or no name: no ticker task, so building outside a runtime is fine.
        let queue = WorkQueue::<u8>::new();
        queue.add(1);
        let (metrics, _registry) = provider();
        let unnamed = WorkQueue::<u8>::with_config(config("", &metrics));
        unnamed.add(1);
        assert_eq!(queue.len() + unnamed.len(), 2);
    }
}
