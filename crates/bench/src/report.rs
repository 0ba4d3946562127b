//! What the benches report: latency histograms and their summaries, the progress bar, the
//! JSON result file.
//!
//! Every result file also says what was measured where: the commit (`git rev-parse HEAD` of
//! the tree the binary was built from, `-dirty` with uncommitted changes, else "unknown"), the
//! date (RFC 3339, UTC) and the machine (cores, memory), so figures from different runs can
//! be told apart.
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

/// Where and when a result was measured (the first fields of every result file).
#[derive(Serialize)]
struct Provenance {
    commit: String,
    date: String,
    machine: Machine,
}

#[derive(Serialize)]
struct Machine {
    cores: usize,
    memory_mib: Option<u64>,
    cpu: Option<String>,
}

#[derive(Serialize)]
struct Recorded<'a, T: Serialize> {
    #[serde(flatten)]
    provenance: Provenance,
    #[serde(flatten)]
    result: &'a T,
}

/// The commit of the source tree the binary was built from (then of the current directory).
fn commit() -> String {
    let git = |dir: &Path, args: &[&str]| std::process::Command::new("git").arg("-C").arg(dir).args(args).output().ok();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    let current = std::env::current_dir().unwrap_or_default();
    for dir in [source, current.as_path()] {
        let Some(out) = git(dir, &["rev-parse", "HEAD"]).filter(|o| o.status.success()) else { continue };
        let head = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let dirty = git(dir, &["diff", "--quiet", "HEAD", "--"]).is_some_and(|o| o.status.code() == Some(1));
        return if dirty { format!("{head}-dirty") } else { head };
    }
    "unknown".into()
}

fn machine() -> Machine {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_kib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, name)| name.trim().to_string());
    Machine {
        cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        memory_mib: memory_kib.map(|kib| kib / 1024),
        cpu,
    }
}

/// Writes `result` as pretty JSON to `path`, after the commit, date and machine.
pub fn write_json(path: &Path, result: &impl Serialize) -> anyhow::Result<()> {
    let provenance = Provenance {
        commit: commit(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        machine: machine(),
    };
    let text = serde_json::to_string_pretty(&Recorded { provenance, result })?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    eprintln!("bench: wrote {}", path.display());
    Ok(())
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
