//! `listwatch bench fanout --compare` and `--sweep`: the same watchers and the same write
//! stream against several systems, one row each, over one or many points.
//!
//! The rows, run one after the other on this machine with the same watcher count, object
//! size, write rate and key spread:
//!
//! * `listwatch`: listwatch with its watch cache on the embedded store (the default run);
//! * `listwatch-etcd`: the same on etcd;
//! * `listwatch-uncached`: listwatch on etcd with `--watch-cache=false`, so every client watch
//!   is its own etcd watch (kube-apiserver's `--watch-cache=false`);
//! * `etcd-direct`: the watchers opened straight on etcd over gRPC and the writes done on etcd
//!   ([`super::etcd_direct`]);
//! * `raw-ceiling`: a broadcaster that writes one pre-serialized copy of each event to every
//!   socket, read by the same reader ([`super::raw`]): what the machine can do.
//!
//! etcd is the one given with `--etcd`, or a private one started for the run (and stopped at
//! its end; `--unsafe-no-fsync`, its data on tmpfs, so that no disk bounds the etcd rows). The
//! ratios printed under the table are taken from CPU seconds per million deliveries (the
//! serving processes' CPU, etcd's included where it is behind listwatch): deliveries per
//! CPU-second against etcd direct, CPU per delivery against the raw ceiling. Those answer "how
//! much better, and how far from the machine" whatever the write rate each system sustained;
//! events/s do not (at `max` they are each row's own write rate times the watchers).
//!
//! A sweep (`--sweep watchers=10,100,1000`, repeatable for a grid over `object-size`,
//! `transport` and `encoding`) repeats the run for every point; every row of every point goes
//! to `--output` and the plots (events/s and p99 latency against watchers, one line per row
//! and swept value) to `--plots` ([`super::plot`]).

use std::path::Path;

use anyhow::{Context, bail};
use clap::ValueEnum;
use serde::Serialize;

use super::ServerArgs;
use super::etcd_direct::{self, DirectPlan, PrivateEtcd};
use super::fanout::{self, FanoutArgs, WriteRate};
use super::report;
use super::row::Row;
use super::server::ServerUnderTest;
use super::transport::{Transport, WireEncoding};

/// The swept dimensions (`--sweep KEY=V1,V2`).
#[derive(Default, Debug)]
struct Sweep {
    watchers: Vec<usize>,
    object_sizes: Vec<usize>,
    transports: Vec<Transport>,
    encodings: Vec<WireEncoding>,
}

impl Sweep {
    fn parse(specs: &[String]) -> anyhow::Result<Sweep> {
        let mut sweep = Sweep::default();
        for spec in specs {
            let (key, values) =
                spec.split_once('=').with_context(|| format!("--sweep wants KEY=V1,V2,..., got {spec:?}"))?;
            let values = values.split(',').map(str::trim).filter(|v| !v.is_empty());
            match key.trim() {
                "watchers" => sweep.watchers = values.map(number(key)).collect::<anyhow::Result<_>>()?,
                "object-size" => sweep.object_sizes = values.map(number(key)).collect::<anyhow::Result<_>>()?,
                "transport" => {
                    sweep.transports = values.map(choice::<Transport>(key)).collect::<anyhow::Result<_>>()?;
                }
                "encoding" => {
                    sweep.encodings = values.map(choice::<WireEncoding>(key)).collect::<anyhow::Result<_>>()?;
                }
                other => bail!("--sweep: unknown key {other:?} (watchers, object-size, transport, encoding)"),
            }
        }
        Ok(sweep)
    }

    /// Every point of the grid, as fan-out arguments (unswept values from `base`).
    fn points(&self, base: &FanoutArgs) -> Vec<FanoutArgs> {
        let or = |values: &[usize], default: usize| if values.is_empty() { vec![default] } else { values.to_vec() };
        let mut points = Vec::new();
        for &transport in self.transports.iter().chain((self.transports.is_empty()).then_some(&base.transport)) {
            for &encoding in self.encodings.iter().chain((self.encodings.is_empty()).then_some(&base.encoding)) {
                for object_size in or(&self.object_sizes, base.object_size) {
                    for watchers in or(&self.watchers, base.watchers) {
                        points.push(FanoutArgs { transport, encoding, object_size, watchers, ..base.clone() });
                    }
                }
            }
        }
        points
    }
}

fn number(key: &str) -> impl Fn(&str) -> anyhow::Result<usize> + '_ {
    move |v| v.parse().with_context(|| format!("--sweep {key}: {v:?} is not a number"))
}

fn choice<T: ValueEnum>(key: &str) -> impl Fn(&str) -> anyhow::Result<T> + '_ {
    move |v| T::from_str(v, true).map_err(|e| anyhow::anyhow!("--sweep {key}: {e}"))
}

/// etcd for the rows that need it: the user's (`--etcd`), or a private one.
struct Etcd {
    endpoints: String,
    pid: Option<u32>,
    _private: Option<PrivateEtcd>,
}

impl Etcd {
    async fn for_run(args: &ServerArgs) -> anyhow::Result<Etcd> {
        if let Some(endpoints) = &args.etcd {
            return Ok(Etcd { endpoints: endpoints.clone(), pid: args.etcd_pid, _private: None });
        }
        let private = PrivateEtcd::start().await?;
        eprintln!("bench: started a private etcd at {} (pid {:?})", private.endpoint(), private.pid());
        Ok(Etcd { endpoints: private.endpoint().to_string(), pid: private.pid(), _private: Some(private) })
    }
}

/// Everything a comparison or sweep writes to `--output`.
#[derive(Serialize)]
struct CompareResult {
    command: String,
    machine: Machine,
    /// Every row of every point.
    rows: Vec<Row>,
}

pub async fn run(args: FanoutArgs) -> anyhow::Result<()> {
    let sweep = Sweep::parse(&args.sweep)?;
    let points = sweep.points(&args);
    let etcd = if args.compare { Some(Etcd::for_run(&args.server).await?) } else { None };
    let mut rows = Vec::new();
    for (i, point) in points.iter().enumerate() {
        eprintln!(
            "bench: point {}/{}: {} watchers, {} B objects, {:?}/{:?}",
            i + 1,
            points.len(),
            point.watchers,
            point.object_size,
            point.transport,
            point.encoding
        );
        let point_rows = match &etcd {
            Some(etcd) => compare_point(point, etcd).await?,
            None => vec![fanout_row("listwatch", point, &point.server, None, String::new()).await?],
        };
        print_table(&point_rows, point.writes_per_sec);
        rows.extend(point_rows);
    }
    let machine = Machine::here(etcd.as_ref());
    let result = CompareResult { command: std::env::args().collect::<Vec<_>>().join(" "), machine, rows };
    if let Some(path) = &args.output {
        report::write_json(path, &result)?;
    }
    if points.len() > 1 {
        std::fs::create_dir_all(&args.plots).with_context(|| format!("creating {}", args.plots.display()))?;
        let stem = args.output.as_deref().and_then(Path::file_stem).and_then(|s| s.to_str()).unwrap_or("fanout");
        super::plot::sweep_plots(&args.plots, stem, &result.rows)?;
    }
    Ok(())
}

/// The raw broadcaster's per-watcher queue in a comparison (events), unless `--serve-arg`
/// gives one.
const RAW_CEILING_QUEUE: usize = 100_000;

/// Every row at one point.
async fn compare_point(point: &FanoutArgs, etcd: &Etcd) -> anyhow::Result<Vec<Row>> {
    let on_etcd = ServerArgs { etcd: Some(etcd.endpoints.clone()), ..point.server.clone() };
    let mut uncached = on_etcd.clone();
    uncached.serve_arg.push("--watch-cache=false".into());
    let embedded = ServerArgs { etcd: None, ..point.server.clone() };
    let mut rows = vec![
        fanout_row("listwatch", point, &embedded, None, "embedded store".into()).await?,
        fanout_row("listwatch-etcd", point, &on_etcd, etcd.pid, format!("etcd {}", etcd.endpoints)).await?,
        fanout_row(
            "listwatch-uncached",
            point,
            &uncached,
            etcd.pid,
            "--watch-cache=false: one etcd watch per client watch".into(),
        )
        .await?,
    ];
    let direct = DirectPlan {
        endpoint: etcd.endpoints.split(',').next().unwrap_or_default().to_string(),
        etcd_pid: etcd.pid,
        watchers: point.watchers,
        watchers_per_connection: 100,
        writes_per_sec: point.writes_per_sec,
        duration: point.duration,
        object_bytes: point.object_size,
        write_connections: point.write_connections,
        objects_per_connection: point.objects_per_connection,
        drain_timeout: point.drain_timeout,
    };
    let mut etcd_row = etcd_direct::run(&direct).await?;
    (etcd_row.transport, etcd_row.encoding) = (point.transport, point.encoding);
    rows.push(etcd_row);
    // The raw broadcaster speaks only its own transport, JSON lines.
    let raw_point = FanoutArgs { transport: Transport::Raw, encoding: WireEncoding::Json, ..point.clone() };
    let mut raw_server = ServerArgs { raw_broadcaster: true, etcd: None, ..point.server.clone() };
    // A ceiling that drops watchers is no ceiling: unless told otherwise, the broadcaster's
    // queues are deep enough that none is evicted (with listwatch's 100 it evicted about half
    // of 1,000 watchers at 1,500 writes/s, which the missing column then showed).
    if !raw_server.serve_arg.iter().any(|a| a.starts_with("--watcher-queue")) {
        raw_server.serve_arg.push(format!("--watcher-queue={RAW_CEILING_QUEUE}"));
    }
    let mut raw_row = fanout_row(
        "raw-ceiling",
        &raw_point,
        &raw_server,
        None,
        "one pre-serialized copy of each event written to every socket, no HTTP".into(),
    )
    .await?;
    (raw_row.transport, raw_row.encoding) = (point.transport, point.encoding);
    rows.push(raw_row);
    Ok(rows)
}

/// Starts a server as `server` says, runs the fan-out on it, and stops it.
async fn fanout_row(
    name: &str,
    point: &FanoutArgs,
    server: &ServerArgs,
    etcd_pid: Option<u32>,
    note: String,
) -> anyhow::Result<Row> {
    let under_test = ServerUnderTest::start(server).await?;
    let result = fanout::measure(point, &under_test, etcd_pid).await.map_err(|e| under_test.annotate(e))?;
    under_test.stop().await;
    fanout::print_summary(&result);
    let mut row = Row::of_fanout(name, point, &result, note);
    if server.etcd.is_some() && etcd_pid.is_none() {
        // etcd works for this row too; without its CPU the row's cost is not known.
        row.cpu_seconds_per_million = None;
    }
    Ok(row)
}

/// The table of one point, with the ratios the comparison is for: deliveries per CPU-second
/// (CPU seconds per million deliveries), which hold whatever the write rate, unlike events/s,
/// which at `max` is each row's own write rate times the watchers.
fn print_table(rows: &[Row], rate: WriteRate) {
    println!(
        "{:<20} {:>9} {:>12} {:>8} {:>8} {:>9} {:>11} {:>10} {:>8}",
        "row", "writes/s", "events/s", "p50 ms", "p99 ms", "CPU s/M", "server CPU", "peak RSS", "missing"
    );
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".into(), |v| format!("{v:.2}{unit}"));
    for r in rows {
        println!(
            "{:<20} {:>9.0} {:>12.0} {:>8.2} {:>8.2} {:>9} {:>11} {:>10} {:>8}",
            r.name,
            r.writes_per_sec,
            r.events_per_sec,
            r.latency_p50_ms,
            r.latency_p99_ms,
            opt(r.cpu_seconds_per_million, ""),
            opt(r.server_cpu_cores, ""),
            r.server_peak_rss_bytes.map_or("-".into(), |b| format!("{:.0} MiB", report::mib(b))),
            r.missing_events
        );
    }
    match rate {
        WriteRate::PerSecond(asked) => {
            for r in rows.iter().filter(|r| r.writes_per_sec < 0.95 * asked) {
                println!(
                    "{} sustained {:.0} of the {asked:.0} writes/s asked: its row had fewer writes to fan out",
                    r.name, r.writes_per_sec
                );
            }
        }
        WriteRate::Max => println!(
            "writes as fast as each system takes them: every row's events/s is its own write rate times the watchers; compare CPU s/M"
        ),
    }
    let per_million = |name: &str| rows.iter().find(|r| r.name == name).and_then(|r| r.cpu_seconds_per_million);
    let direct = per_million("etcd-direct").filter(|d| *d > 0.0);
    let raw = per_million("raw-ceiling").filter(|r| *r > 0.0);
    for name in ["listwatch", "listwatch-etcd"] {
        let Some(listwatch) = per_million(name).filter(|l| *l > 0.0) else { continue };
        if let Some(direct) = direct {
            println!("deliveries per CPU-second, {name} / etcd direct: {:.1}x (target >= 20x)", direct / listwatch);
        }
        if let Some(raw) = raw {
            println!("CPU per delivery, {name} / raw ceiling: {:.2}x (target <= 1.25x)", listwatch / raw);
        }
    }
}

/// The machine a comparison ran on, for the JSON: rows of different machines compare only by
/// CPU per delivery, and only knowing what bounded them.
#[derive(Serialize)]
struct Machine {
    cores: usize,
    cpu_model: String,
    memory_bytes: u64,
    /// Where the etcd rows' etcd kept its data.
    etcd: String,
}

impl Machine {
    fn here(etcd: Option<&Etcd>) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))
            .unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        let etcd = match etcd {
            None => String::new(),
            Some(Etcd { _private: Some(_), .. }) => {
                "a private etcd 3.5 the bench started: --unsafe-no-fsync, its data on tmpfs (/dev/shm) when there is one".into()
            }
            Some(e) => format!("the given etcd at {} (its disk as it is)", e.endpoints),
        };
        Machine { cores: std::thread::available_parallelism().map_or(0, usize::from), cpu_model, memory_bytes, etcd }
    }
}
