//! What both reflector bench programs share, byte for byte: this file is a module of the
//! `reflector_bench` example and is included by `crates/bench/kube-rs` through
//! `#[path]`, so both decode the same Pod struct, read `/proc` the same way, take the same
//! arguments and print the same JSON line.
//!
//! * [`BenchPod`]: the fields of the pods `listwatch bench create` writes (spec, status), fully
//!   decoded. Its metadata type is each library's own `ObjectMeta`
//!   (`listwatch_client::ObjectMeta`, `k8s_openapi`'s for kube-rs, which `kube::Resource::meta`
//!   requires), so each side holds what its users would.
//! * [`Usage`]: CPU seconds (user + system, `/proc/self/stat`) and `VmRSS` / `VmHWM`
//!   (`/proc/self/status`).
//! * [`Args`], [`Phases`]: the run's settings and the measurements, printed as one JSON line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The annotation the update driver bumps on every write (`000001`, `000002`, ...).
pub const ROUND_ANNOTATION: &str = "bench.listwatch.dev/round";

/// A Pod with every field the bench pods carry, generic over the metadata type.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchPod<M> {
    #[serde(default)]
    pub metadata: M,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: Option<PodStatus>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(default)]
    pub restart_policy: Option<String>,
    #[serde(default)]
    pub termination_grace_period_seconds: Option<i64>,
    #[serde(default)]
    pub dns_policy: Option<String>,
    #[serde(default)]
    pub service_account_name: Option<String>,
    #[serde(default)]
    pub scheduler_name: Option<String>,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub node_name: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub image_pull_policy: Option<String>,
    #[serde(default)]
    pub ports: Vec<ContainerPort>,
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    pub container_port: i32,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirements {
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub qos_class: Option<String>,
    #[serde(default)]
    pub pod_ip: Option<String>,
    #[serde(default)]
    pub host_ip: Option<String>,
    #[serde(default)]
    pub start_time: Option<String>,
}

/// CPU and memory of this process.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// utime + stime, in seconds (clock ticks of 10 ms).
    pub cpu_seconds: f64,
    /// `VmRSS`, bytes.
    pub rss_bytes: u64,
    /// `VmHWM` (peak RSS since start), bytes.
    pub peak_rss_bytes: u64,
}

impl Usage {
    pub fn now() -> Usage {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command name (which may hold spaces): utime and stime are fields 14
        // and 15, the 12th and 13th after the ')'.
        let ticks = stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
                field(11) + field(12)
            })
            .unwrap_or(0);
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        Usage {
            // USER_HZ is 100 on every Linux this runs on (`getconf CLK_TCK`).
            cpu_seconds: ticks as f64 / 100.0,
            rss_bytes: kib("VmRSS:") * 1024,
            peak_rss_bytes: kib("VmHWM:") * 1024,
        }
    }
}

/// The settings of a client run.
#[derive(Clone, Debug)]
pub struct Args {
    pub kubeconfig: PathBuf,
    pub namespace: String,
    /// Watch events (ADDED / MODIFIED / DELETED) to take in after the initial sync.
    pub events: u64,
    /// Created (empty) once the initial sync is done.
    pub ready_file: Option<PathBuf>,
    /// When set, the watch is not opened until this file exists (backlog mode: the updates
    /// were written meanwhile and are replayed from the server's watch cache at full speed).
    pub go_file: Option<PathBuf>,
}

impl Args {
    /// `--kubeconfig PATH --namespace NS --events M [--ready-file PATH] [--go-file PATH]`.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut parsed = Args {
            kubeconfig: PathBuf::new(),
            namespace: "default".into(),
            events: 0,
            ready_file: None,
            go_file: None,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} wants a value"));
            match flag.as_str() {
                "--kubeconfig" => parsed.kubeconfig = value()?.into(),
                "--namespace" => parsed.namespace = value()?,
                "--events" => parsed.events = value()?.parse().map_err(|e| format!("--events: {e}"))?,
                "--ready-file" => parsed.ready_file = Some(value()?.into()),
                "--go-file" => parsed.go_file = Some(value()?.into()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if parsed.kubeconfig.as_os_str().is_empty() {
            return Err("--kubeconfig is required".into());
        }
        Ok(parsed)
    }
}

/// Waits until `path` exists, polling every 5 ms.
pub async fn wait_for_file(path: &Path) {
    while !path.exists() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The measurements of one run, taken at the phase boundaries.
pub struct Phases {
    client: &'static str,
    start: Instant,
    start_usage: Usage,
    synced: Option<(Instant, Usage, usize)>,
    watch_start: Option<(Instant, Usage)>,
    first_event: Option<Instant>,
}

impl Phases {
    pub fn start(client: &'static str) -> Phases {
        Phases {
            client,
            start: Instant::now(),
            start_usage: Usage::now(),
            synced: None,
            watch_start: None,
            first_event: None,
        }
    }

    /// The initial list is in the store (`objects` of them).
    pub fn synced(&mut self, objects: usize) {
        self.synced = Some((Instant::now(), Usage::now(), objects));
    }

    /// The watch phase starts (CPU from here on counts for the events).
    pub fn watch_start(&mut self) {
        self.watch_start = Some((Instant::now(), Usage::now()));
    }

    /// Called for every event taken in; remembers the first one's time.
    pub fn event(&mut self) {
        if self.first_event.is_none() {
            self.first_event = Some(Instant::now());
        }
    }

    /// The JSON line: after `events` events, with the store holding `store_len` objects whose
    /// round annotations are counted in `rounds`.
    pub fn finish(&self, events: u64, store_len: usize, rounds: BTreeMap<String, usize>) -> serde_json::Value {
        let end = Instant::now();
        let usage = Usage::now();
        let (synced_at, synced_usage, objects) = self.synced.unwrap_or((end, usage, 0));
        let (watch_at, watch_usage) = self.watch_start.unwrap_or((end, usage));
        let first = self.first_event.unwrap_or(watch_at);
        let watch_cpu = usage.cpu_seconds - watch_usage.cpu_seconds;
        let watch_seconds = end.duration_since(first).as_secs_f64();
        let per = |n: f64, d: f64| if d > 0.0 { (n / d).round() } else { 0.0 };
        serde_json::json!({
            "client": self.client,
            "objects": objects,
            "sync_seconds": synced_at.duration_since(self.start).as_secs_f64(),
            "sync_cpu_seconds": synced_usage.cpu_seconds - self.start_usage.cpu_seconds,
            "rss_after_sync_bytes": synced_usage.rss_bytes,
            "peak_rss_after_sync_bytes": synced_usage.peak_rss_bytes,
            "events": events,
            "watch_seconds": watch_seconds,
            "watch_cpu_seconds": watch_cpu,
            "events_per_second": per(events as f64, watch_seconds),
            "events_per_cpu_second": per(events as f64, watch_cpu),
            "rss_end_bytes": usage.rss_bytes,
            "peak_rss_bytes": usage.peak_rss_bytes,
            "store_len": store_len,
            "rounds": rounds,
        })
    }
}
