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
//! its end). The ratios printed under the table (listwatch / etcd direct, listwatch / raw
//! ceiling) are what the question "how much better, and how far from the machine" asks.
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
use super::fanout::{self, FanoutArgs};
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
            return Ok(Etcd { endpoints: endpoints.clone(), pid: None, _private: None });
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
        print_table(&point_rows);
        rows.extend(point_rows);
    }
    let result = CompareResult { command: std::env::args().collect::<Vec<_>>().join(" "), rows };
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
    Ok(Row::of_fanout(name, point, &result, note))
}

/// The table of one point, with the ratios the comparison is for.
fn print_table(rows: &[Row]) {
    println!(
        "{:<20} {:>12} {:>8} {:>8} {:>11} {:>10} {:>9} {:>8}",
        "row", "events/s", "p50 ms", "p99 ms", "server CPU", "peak RSS", "etcd CPU", "missing"
    );
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".into(), |v| format!("{v:.2}{unit}"));
    for r in rows {
        println!(
            "{:<20} {:>12.0} {:>8.2} {:>8.2} {:>11} {:>10} {:>9} {:>8}",
            r.name,
            r.events_per_sec,
            r.latency_p50_ms,
            r.latency_p99_ms,
            opt(r.server_cpu_cores, ""),
            r.server_peak_rss_bytes.map_or("-".into(), |b| format!("{:.0} MiB", report::mib(b))),
            opt(r.etcd_cpu_cores, ""),
            r.missing_events
        );
    }
    let rate = |name: &str| rows.iter().find(|r| r.name == name).map(|r| r.events_per_sec);
    if let Some(listwatch) = rate("listwatch") {
        if let Some(direct) = rate("etcd-direct").filter(|d| *d > 0.0) {
            println!("listwatch / etcd direct: {:.1}x (target >= 20x)", listwatch / direct);
        }
        if let Some(raw) = rate("raw-ceiling").filter(|r| *r > 0.0) {
            println!("listwatch / raw ceiling: {:.0} % (target >= 50 %)", 100.0 * listwatch / raw);
        }
    }
}
