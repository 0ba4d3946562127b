//! What the benches report: latency histograms and their summaries, the progress bar, the
//! JSON result file.
//!
//! Latencies are recorded in microseconds in `hdrhistogram`s (two significant digits: 1%
//! resolution, ~20 KB each, so every watcher can own one and they merge at the end).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// Longest latency a histogram holds (1 hour, in µs); longer ones count as this.
const MAX_LATENCY_MICROS: u64 = 3_600_000_000;

/// A latency histogram in microseconds.
pub fn latency_histogram() -> Histogram<u32> {
    Histogram::new_with_bounds(1, MAX_LATENCY_MICROS, 2).expect("valid histogram bounds")
}

/// Records a latency.
pub fn record(histogram: &mut Histogram<u32>, latency: Duration) {
    let micros = (latency.as_micros() as u64).clamp(1, MAX_LATENCY_MICROS);
    histogram.saturating_record(micros);
}

/// A histogram that sums the others (64-bit counts).
pub fn merged_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_MICROS, 2).expect("valid histogram bounds")
}

/// Adds a watcher's or writer's histogram to a merged one.
pub fn merge(into: &mut Histogram<u64>, from: &Histogram<u32>) {
    for value in from.iter_recorded() {
        into.saturating_record_n(value.value_iterated_to(), u64::from(value.count_at_value()));
    }
}

/// Percentiles of a latency histogram, in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    pub fn of<T: hdrhistogram::Counter>(histogram: &Histogram<T>) -> LatencySummary {
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        LatencySummary {
            count: histogram.len(),
            mean_ms: histogram.mean() / 1000.0,
            p50_ms: ms(histogram.value_at_quantile(0.50)),
            p90_ms: ms(histogram.value_at_quantile(0.90)),
            p99_ms: ms(histogram.value_at_quantile(0.99)),
            p999_ms: ms(histogram.value_at_quantile(0.999)),
            max_ms: ms(histogram.max()),
        }
    }

    /// `p50 1.2 ms, p99 8.0 ms, max 20.1 ms`.
    pub fn brief(&self) -> String {
        format!("p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms", self.p50_ms, self.p99_ms, self.max_ms)
    }
}

/// A progress bar over `len` units (hidden when stderr is not a terminal).
pub fn progress_bar(len: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    let template = format!("{{spinner}} [{{elapsed_precise}}] {{bar:30.cyan/blue}} {{pos}}/{{len}} {unit} {{msg}}");
    bar.set_style(ProgressStyle::with_template(&template).expect("valid template").progress_chars("=> "));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Writes `result` as pretty JSON to `path`.
pub fn write_json(path: &Path, result: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(result)?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    eprintln!("bench: wrote {}", path.display());
    Ok(())
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
