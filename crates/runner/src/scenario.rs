//! The scenario file of `listwatch simulate`: what runs (backend and servers, a workload,
//! clients), which faults happen when, and what must hold at the end.
//!
//! It is YAML, read strictly: an unknown key, a bad duration, a fault the backend cannot do
//! (a leader change without a 3-member etcd) is refused before anything starts, with the file's
//! line and column and what was expected. Faults are steps with a time (`at: 5s`) or a period
//! (`every: 3s`, with optional `from`, `until` and `jitter`) and one fault key:
//!
//! ```yaml
//! name: compaction-under-churn
//! seed: 42
//! duration: 20s
//! backend: {kind: ephemeral}
//! workload: {objects: 40, rate: 50}
//! clients:
//!   - {name: plain, count: 3}
//!   - {name: streaming, mode: streaming-list, selector: app=a}
//! faults:
//!   - {at: 5s, compact: {}}
//!   - {every: 4s, from: 2s, jitter: 1s, dropWatches: {}}
//! checks: {maxRelistsPerClient: 4}
//! ```

use std::cell::Cell;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// A whole scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// A name for reports.
    pub name: String,
    /// What real failure the scenario models (for people; shown in the summary).
    #[serde(default)]
    pub description: String,
    /// The seed of every random choice (workload, fault jitter); `--seed` overrides it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// How long the workload and faults run (the checks' quiet period comes after).
    pub duration: Dur,
    /// Storage and servers.
    #[serde(default)]
    pub backend: BackendSpec,
    /// The writes.
    #[serde(default)]
    pub workload: Workload,
    /// Who watches.
    pub clients: Vec<ClientSpec>,
    /// Programs of the user's own (a controller, `kubectl get -w`, a test binary), run with
    /// the server's kubeconfig in `KUBECONFIG`; their exit codes count.
    #[serde(default)]
    pub commands: Vec<CommandSpec>,
    /// What goes wrong, and when.
    #[serde(default)]
    pub faults: Vec<FaultStep>,
    /// What must hold at the end besides the watch guarantees.
    #[serde(default)]
    pub checks: Checks,
    /// How sensitive the client audit's rules are (`off: [rule, ...]` turns rules off).
    #[serde(default)]
    pub audit: listwatch_simulator::audit::Thresholds,
}

/// Where objects live and how many servers serve them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackendSpec {
    /// The storage kind.
    #[serde(default)]
    pub kind: BackendKind,
    /// etcd members (1 or 3; etcd only).
    #[serde(default = "one")]
    pub members: u8,
    /// listwatch servers sharing the storage (more than one needs etcd).
    #[serde(default = "one")]
    pub servers: u8,
    /// More `listwatch serve` flags for every server (a smaller watch-cache window, say).
    #[serde(default)]
    pub server_args: Vec<String>,
}

impl Default for BackendSpec {
    fn default() -> Self {
        BackendSpec { kind: BackendKind::default(), members: 1, servers: 1, server_args: Vec::new() }
    }
}

fn one() -> u8 {
    1
}

/// The storage kinds a scenario can run on.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// The embedded store, in memory only.
    #[default]
    Ephemeral,
    /// The embedded store on a data directory (survives a server restart).
    Embedded,
    /// Real etcd (`scripts/etcd.sh`), one member or three.
    Etcd,
}

/// The writer: creates, updates and deletes of ConfigMaps at a steady rate, seeded.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Workload {
    /// Namespaces the objects are spread over (`sim-0`, `sim-1`, ...).
    #[serde(default = "Workload::default_namespaces")]
    pub namespaces: u32,
    /// Objects kept alive (creates below it, deletes above it).
    #[serde(default = "Workload::default_objects")]
    pub objects: u32,
    /// Writes per second.
    #[serde(default = "Workload::default_rate")]
    pub rate: f64,
    /// Bytes of payload per object.
    #[serde(default = "Workload::default_size")]
    pub size: usize,
    /// Percent of updates that flip the object's `app` label between `a` and `b` (moving it
    /// in and out of label selectors).
    #[serde(default = "Workload::default_label_flips")]
    pub label_flips: u8,
    /// Deployments scaled up and down besides the ConfigMaps: the servers then run the
    /// controllers (`--controllers=all`), whose pods churn as on a cluster; clients with
    /// `resource: pods` watch them.
    #[serde(default)]
    pub deployments: Option<DeploymentChurn>,
}

/// Deployments in the first namespace, each scaled to a random size now and then.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeploymentChurn {
    /// How many (`churn-0`, `churn-1`, ...).
    #[serde(default = "DeploymentChurn::default_count")]
    pub count: u32,
    /// Each scale picks 0..=this many replicas.
    #[serde(default = "DeploymentChurn::default_max_replicas")]
    pub max_replicas: u32,
    /// How often one of them (chosen by the seed) is scaled.
    #[serde(default = "DeploymentChurn::default_every")]
    pub every: Dur,
}

impl DeploymentChurn {
    fn default_count() -> u32 {
        3
    }
    fn default_max_replicas() -> u32 {
        5
    }
    fn default_every() -> Dur {
        Dur(Duration::from_secs(1))
    }
}

impl Workload {
    fn default_namespaces() -> u32 {
        2
    }
    fn default_objects() -> u32 {
        20
    }
    fn default_rate() -> f64 {
        20.0
    }
    fn default_size() -> usize {
        256
    }
    fn default_label_flips() -> u8 {
        20
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            namespaces: Self::default_namespaces(),
            objects: Self::default_objects(),
            rate: Self::default_rate(),
            size: Self::default_size(),
            label_flips: Self::default_label_flips(),
            deployments: None,
        }
    }
}

/// A group of identical in-process clients (our reflector).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientSpec {
    /// A name; the clients are `<name>-0`, `<name>-1`, ...
    pub name: String,
    /// How many.
    #[serde(default = "one_u32")]
    pub count: u32,
    /// How the reflector syncs.
    #[serde(default)]
    pub mode: ClientMode,
    /// Watch one namespace only.
    #[serde(default)]
    pub namespace: Option<String>,
    /// A label selector (`app=a`).
    #[serde(default)]
    pub selector: Option<String>,
    /// What it lists and watches: `configmaps` (the workload's objects, the default) or
    /// `pods` (those of the workload's deployments).
    #[serde(default)]
    pub resource: WatchedResource,
}

/// The resources clients can watch.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WatchedResource {
    #[default]
    Configmaps,
    Pods,
}

impl WatchedResource {
    /// The plural, as the checker names resources.
    pub fn plural(self) -> &'static str {
        match self {
            WatchedResource::Configmaps => "configmaps",
            WatchedResource::Pods => "pods",
        }
    }

    /// The resource for the client.
    pub fn api_resource(self) -> listwatch_client::ApiResource {
        match self {
            WatchedResource::Configmaps => listwatch_client::ApiResource::configmaps(),
            WatchedResource::Pods => listwatch_client::ApiResource::pods(),
        }
    }
}

fn one_u32() -> u32 {
    1
}

/// An external program run during the scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CommandSpec {
    /// A name for the report; the program authenticates as `simulate:<name>`.
    pub name: String,
    /// The command line, run by `sh -c`.
    pub run: String,
    /// What its exit must be (`success`, the default, or `running`).
    #[serde(default)]
    pub exit: Option<CommandExpectation>,
    /// The older spelling of `exit` (`expect: running`), or a condition over the final objects
    /// that must hold within the converge deadline (the controller's work).
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Where the program serves its informer cache as a Kubernetes List, compared with storage
    /// after the quiet period; `${PORT}` is the port the runner gave it (in `PORT`).
    #[serde(default)]
    pub cache: Option<CacheSpec>,
    /// What the run waits for before its fault schedule starts (`watching`: the program has
    /// opened a watch), so a program slow to start meets every fault the scenario plans for it.
    #[serde(default)]
    pub ready: Option<Readiness>,
}

/// How long `expireContinue` lasts.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContinueExpiry {
    /// Every continue token for a while (`for`).
    For(Dur),
    /// The next N continue tokens, whenever they come (`count`).
    Next(u64),
}

/// `ready:` of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Readiness {
    /// A WATCH of the program's has been answered by a server.
    Watching,
}

impl CommandSpec {
    /// What its exit must be.
    pub fn exit(&self) -> CommandExpectation {
        match (&self.exit, &self.expect) {
            (Some(exit), _) => *exit,
            (None, Some(Expect::Exit(exit))) => *exit,
            _ => CommandExpectation::Success,
        }
    }

    /// The condition its work must meet, if any.
    pub fn work(&self) -> Option<&WorkCondition> {
        match &self.expect {
            Some(Expect::Work(work)) => Some(work),
            _ => None,
        }
    }
}

/// `expect:` of a command.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Expect {
    /// `success` or `running`.
    Exit(CommandExpectation),
    /// A CEL condition every object of a resource must meet.
    Work(WorkCondition),
}

/// A condition over the final objects: `cel` (with `self` the object) holds for every object
/// of `resource` (in `namespace` if given) within the converge deadline.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkCondition {
    /// The resource's plural name.
    pub resource: String,
    /// Its API group (`""`, the default, for the core group).
    #[serde(default)]
    pub group: String,
    /// Its version (default `v1`).
    #[serde(default = "v1")]
    pub version: String,
    /// Only this namespace's objects.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The CEL expression.
    pub cel: String,
}

fn v1() -> String {
    "v1".into()
}

/// Where a program serves its cache, and what of storage it holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CacheSpec {
    /// A URL; the scope is the one the program watched.
    Url(String),
    /// A URL and the scope to compare with.
    Scoped(ScopedCache),
}

/// `cache: {url, resource, ...}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScopedCache {
    /// The URL.
    pub url: String,
    /// The resource's plural name.
    pub resource: String,
    /// Its group.
    #[serde(default)]
    pub group: String,
    /// The namespace cached (all when absent).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The label selector cached.
    #[serde(default)]
    pub label_selector: Option<String>,
}

/// What an external program must do.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CommandExpectation {
    /// Exit 0 before the run ends (the quiet period included).
    #[default]
    Success,
    /// Still be running when the run ends (it is then stopped): a watcher or controller that
    /// must survive every fault.
    Running,
}

/// How a reflector syncs.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ClientMode {
    /// LIST, then WATCH from the list's resourceVersion (client-go's default).
    #[default]
    ListWatch,
    /// A streaming list (`sendInitialEvents=true`), falling back to LIST.
    StreamingList,
}

/// What must hold besides the watch guarantees.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Checks {
    /// How long after the last write every client has to catch up (default 10 s).
    #[serde(default)]
    pub converge: Option<Dur>,
    /// At most this many relists per client.
    #[serde(default)]
    pub max_relists_per_client: Option<usize>,
}

/// One fault and when it happens.
#[derive(Debug)]
pub struct FaultStep {
    /// When the fault happens.
    pub when: When,
    /// What happens.
    pub fault: Fault,
}

/// When a fault happens: once, or every period between `from` and `until`, each time moved by
/// a random amount up to `jitter`.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// Once, this long after the start.
    At(Duration),
    /// Repeatedly.
    Every { period: Duration, from: Duration, until: Option<Duration>, jitter: Duration },
}

/// The faults a scenario can cause.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Fault {
    /// Compact storage to its current revision (watches and lists behind it get 410).
    Compact {},
    /// End every open watch of a resource (or all) cleanly, as a restart would.
    DropWatches {
        /// The resource (plural); all when absent.
        #[serde(default)]
        resource: Option<String>,
    },
    /// Throw a resource's watch cache away: its watches end, new ones get 429 until it has
    /// relisted, older resourceVersions get 410.
    ResetCache {
        /// The resource (plural), `configmaps` by default.
        #[serde(default)]
        resource: Option<String>,
    },
    /// Answer the next `count` API requests 429 with `Retry-After`.
    Throttle {
        /// How many requests.
        count: u32,
        /// Seconds in `Retry-After` (1 by default).
        #[serde(default)]
        retry_after: Option<u32>,
        /// Answer as kube's in-flight and priority-and-fairness filters do, in plain text, not
        /// with a Status (clients that expect a Status must cope: kopf #1229).
        #[serde(default)]
        plain: bool,
    },
    /// Storage fails every request, as a dead etcd does, for a while.
    StorageOutage {
        /// How long.
        #[serde(rename = "for")]
        duration: Dur,
    },
    /// A fault on the watch streams' bytes.
    Streams(StreamFault),
    /// Restart a listwatch server (on its data directory), or kill it and start it again.
    RestartServer {
        /// Which server (0 by default).
        #[serde(default)]
        server: usize,
        /// SIGKILL instead of a graceful stop.
        #[serde(default)]
        kill: bool,
    },
    /// A slow client: one client stops reading its watch for a while (its buffers and the
    /// server's fill; the watch cache may close it as unresponsive), then reads on.
    PauseClient {
        /// The client (`<name>-<i>`).
        client: String,
        /// How long it stops reading (at least).
        #[serde(rename = "for")]
        duration: Dur,
        /// Go on not reading after `for` until the server has closed a watch for being slow
        /// (its queue overflowed), so the fault has always taken effect when the pause ends.
        until_closed: bool,
    },
    /// Change how often watchers get bookmarks (kube: once a minute); `0s` restores it.
    BookmarkInterval {
        /// The new interval.
        interval: Dur,
    },
    /// Kill an etcd member (SIGKILL, as a crash), and start it again after a while.
    EtcdKill {
        /// Which member (0-based); the current leader when absent.
        #[serde(default)]
        member: Option<usize>,
        /// How long it stays down.
        #[serde(rename = "restartAfter")]
        restart_after: Dur,
    },
    /// A graceful etcd leader change (`etcdctl move-leader`) to another member.
    EtcdLeaderChange {},
    /// For a while (`for`), or for the next `count` of them whenever they come, every LIST that
    /// sends a `continue` token gets 410 Expired, as after a compaction of its revision (with
    /// kube's token to continue inconsistently).
    ExpireContinue(ContinueExpiry),
    /// For a while, LISTs and WATCHes at a resourceVersion above the one storage had at the
    /// fault minus `behind` get 504 "Too large resource version", as from a server whose cache
    /// trails storage after a restart.
    TooLargeResourceVersion {
        /// How long.
        duration: Dur,
        /// How far behind storage the server claims to be.
        behind: i64,
    },
    /// One server's watch caches apply storage's changes `lag` late, for a while: a server
    /// whose cache trails the others'.
    LaggingCache {
        /// Which server (0 by default).
        server: usize,
        /// How late.
        lag: Dur,
        /// How long.
        duration: Dur,
    },
    /// For a while, calls to the admission webhooks (every one, or the one named) fail as a
    /// webhook that is down, slow (it times out) or answers errors would; each webhook's
    /// `failurePolicy` decides whether the writes it sees are refused or let through.
    WebhookOutage {
        /// `down`, `slow` or `error`.
        mode: String,
        /// The webhook's name in its configuration; every webhook when absent.
        #[serde(default)]
        webhook: Option<String>,
        /// How long.
        #[serde(rename = "for")]
        duration: Dur,
    },
    /// Make the server break a watch guarantee on purpose (the checker's self-test).
    BreakWatch {
        /// `skip-event`, `duplicate-event`, `bookmark-ahead`, `alter-object`,
        /// `spurious-expired` or `none`.
        kind: String,
    },
}

/// A fault on the bytes of open watch streams (every transport alike).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", tag = "fault")]
pub enum StreamFault {
    /// Cut every open stream in the middle of an event.
    Cut {},
    /// Hold each batch this long (± jitter), keeping the order.
    Latency {
        /// Milliseconds.
        ms: u64,
        /// Milliseconds of jitter.
        #[serde(default)]
        jitter: u64,
        /// How long.
        #[serde(rename = "for")]
        duration: Dur,
    },
    /// Stop sending on open streams (connections stay open), then end them.
    Blackhole {
        /// How long.
        #[serde(rename = "for")]
        duration: Dur,
    },
    /// HTTP/2 GOAWAY on every connection.
    Goaway {},
    /// The open streams (and those opened within `for`) go silent for good and never end: a
    /// half-open connection, which only the client's own timeout notices.
    Stall {
        /// How long new streams are stalled too (default: only those open now).
        #[serde(rename = "for", default)]
        duration: Option<Dur>,
    },
}

/// A duration written as `250ms`, `5s`, `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dur, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text).map(Dur).map_err(|_| {
            de::Error::custom(format!("invalid duration {text:?}: expected a number and a unit (ms, s, m, h), e.g. 5s"))
        })
    }
}

/// The keys of a fault step that say when; every other key names the fault.
const TIMING_KEYS: [&str; 5] = ["at", "every", "from", "until", "jitter"];

/// The fault keys (for "expected one of" messages).
const FAULT_KEYS: [&str; 16] = [
    "compact",
    "dropWatches",
    "resetCache",
    "throttle",
    "storageOutage",
    "streams",
    "restartServer",
    "pauseClient",
    "bookmarkInterval",
    "etcdKill",
    "etcdLeaderChange",
    "breakWatch",
    "expireContinue",
    "tooLargeResourceVersion",
    "laggingCache",
    "webhookOutage",
];

thread_local! {
    /// The backend of the scenario being read: some faults need a particular one, and saying
    /// so while the step is read puts the step's line and column in the error.
    static BACKEND: Cell<(BackendKind, u8, u8)> = const { Cell::new((BackendKind::Ephemeral, 1, 1)) };
}

impl<'de> Deserialize<'de> for FaultStep {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<FaultStep, D::Error> {
        deserializer.deserialize_map(FaultStepVisitor)
    }
}

struct FaultStepVisitor;

impl<'de> Visitor<'de> for FaultStepVisitor {
    type Value = FaultStep;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a fault step: `at` or `every`, and one of {}", FAULT_KEYS.join(", "))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FaultStep, A::Error> {
        let (mut at, mut every, mut from, mut until, mut jitter) = (None, None, None, None, None);
        let mut fault = None;
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "at" => &mut at,
                "every" => &mut every,
                "from" => &mut from,
                "until" => &mut until,
                "jitter" => &mut jitter,
                name => {
                    if fault.is_some() {
                        return Err(de::Error::custom(format!("a step has one fault; `{name}` is a second")));
                    }
                    fault = Some(read_fault(name, &mut map)?);
                    continue;
                }
            };
            *slot = Some(map.next_value::<Dur>()?.0);
        }
        let fault = fault.ok_or_else(|| {
            de::Error::custom(format!("a fault step needs one fault: one of {}", FAULT_KEYS.join(", ")))
        })?;
        let when = match (at, every) {
            (Some(at), None) if from.is_none() && until.is_none() && jitter.is_none() => When::At(at),
            (Some(_), None) => return Err(de::Error::custom("`from`, `until` and `jitter` go with `every`, not `at`")),
            (None, Some(period)) if period.is_zero() => return Err(de::Error::custom("`every` must be more than 0s")),
            (None, Some(period)) => {
                When::Every { period, from: from.unwrap_or_default(), until, jitter: jitter.unwrap_or_default() }
            }
            (Some(_), Some(_)) => return Err(de::Error::custom("a step has `at` or `every`, not both")),
            (None, None) => return Err(de::Error::custom("a fault step needs `at` or `every`")),
        };
        Ok(FaultStep { when, fault })
    }
}

/// Reads the value of fault key `name`, refusing a fault the scenario's backend cannot do.
fn read_fault<'de, A: MapAccess<'de>>(name: &str, map: &mut A) -> Result<Fault, A::Error> {
    let fault = match name {
        "compact" => {
            map.next_value::<de::IgnoredAny>()?;
            Fault::Compact {}
        }
        "dropWatches" => map.next_value::<DropWatchesArgs>().map(|a| Fault::DropWatches { resource: a.resource })?,
        "resetCache" => map.next_value::<ResetCacheArgs>().map(|a| Fault::ResetCache { resource: a.resource })?,
        "throttle" => map.next_value::<ThrottleArgs>().map(|a| Fault::Throttle {
            count: a.count,
            retry_after: a.retry_after,
            plain: a.plain,
        })?,
        "storageOutage" => map.next_value::<OutageArgs>().map(|a| Fault::StorageOutage { duration: a.duration })?,
        "streams" => Fault::Streams(map.next_value::<StreamFault>()?),
        "restartServer" => {
            map.next_value::<RestartArgs>().map(|a| Fault::RestartServer { server: a.server, kill: a.kill })?
        }
        "breakWatch" => map.next_value::<BreakArgs>().map(|a| Fault::BreakWatch { kind: a.kind })?,
        "etcdKill" => map
            .next_value::<EtcdKillArgs>()
            .map(|a| Fault::EtcdKill { member: a.member, restart_after: a.restart_after })?,
        "pauseClient" => map.next_value::<PauseArgs>().map(|a| Fault::PauseClient {
            client: a.client,
            duration: a.duration,
            until_closed: a.until_closed,
        })?,
        "bookmarkInterval" => {
            map.next_value::<BookmarkArgs>().map(|a| Fault::BookmarkInterval { interval: a.interval })?
        }
        "expireContinue" => {
            let a = map.next_value::<ExpireContinueArgs>()?;
            if a.duration.is_some() == a.count.is_some() {
                return Err(de::Error::custom("expireContinue takes one of `for` (a duration) or `count`"));
            }
            Fault::ExpireContinue(match (a.duration, a.count) {
                (Some(duration), _) => ContinueExpiry::For(duration),
                (None, count) => ContinueExpiry::Next(count.unwrap_or_default()),
            })
        }
        "tooLargeResourceVersion" => map
            .next_value::<TooLargeArgs>()
            .map(|a| Fault::TooLargeResourceVersion { duration: a.duration, behind: a.behind })?,
        "laggingCache" => map.next_value::<LagArgs>().map(|a| Fault::LaggingCache {
            server: a.server,
            lag: a.lag,
            duration: a.duration,
        })?,
        "etcdLeaderChange" => {
            map.next_value::<de::IgnoredAny>()?;
            Fault::EtcdLeaderChange {}
        }
        "webhookOutage" => {
            let a = map.next_value::<WebhookOutageArgs>()?;
            const MODES: [&str; 3] = ["down", "slow", "error"];
            if !MODES.contains(&a.mode.as_str()) {
                return Err(de::Error::unknown_variant(&a.mode, &MODES));
            }
            Fault::WebhookOutage { mode: a.mode, webhook: a.webhook, duration: a.duration }
        }
        other if TIMING_KEYS.contains(&other) => unreachable!("timing keys are read by the caller"),
        other => {
            let expected: Vec<&str> = TIMING_KEYS.iter().chain(FAULT_KEYS.iter()).copied().collect();
            return Err(de::Error::unknown_field(other, leak(expected)));
        }
    };
    let (backend, servers, members) = BACKEND.with(Cell::get);
    match &fault {
        Fault::EtcdKill { .. } if backend != BackendKind::Etcd => {
            return Err(de::Error::custom("etcdKill needs `backend: {kind: etcd}`"));
        }
        Fault::EtcdKill { member: Some(m), .. } if usize::from(members) <= *m => {
            return Err(de::Error::custom(format!(
                "etcdKill: member {m} does not exist (the cluster has {members} member(s), numbered from 0)"
            )));
        }
        Fault::EtcdLeaderChange {} if backend != BackendKind::Etcd || members < 3 => {
            return Err(de::Error::custom(
                "etcdLeaderChange needs a cluster to change leaders in: `backend: {kind: etcd, members: 3}`",
            ));
        }
        _ => {}
    }
    if let Fault::RestartServer { server, .. } = &fault {
        if usize::from(servers) <= *server {
            return Err(de::Error::custom(format!(
                "restartServer: server {server} does not exist (the backend has {servers} server(s), numbered from 0)"
            )));
        }
        if backend == BackendKind::Ephemeral {
            return Err(de::Error::custom(
                "restartServer needs storage that outlives the server: backend kind `embedded` or `etcd`, not `ephemeral`",
            ));
        }
    }
    if let Fault::BreakWatch { kind } = &fault {
        const KINDS: [&str; 6] =
            ["skip-event", "duplicate-event", "bookmark-ahead", "alter-object", "spurious-expired", "none"];
        if !KINDS.contains(&kind.as_str()) {
            return Err(de::Error::unknown_variant(kind, &KINDS));
        }
    }
    Ok(fault)
}

/// `unknown_field` wants a `&'static [&'static str]`; the list is built once per error.
fn leak(names: Vec<&'static str>) -> &'static [&'static str] {
    Box::leak(names.into_boxed_slice())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DropWatchesArgs {
    #[serde(default)]
    resource: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetCacheArgs {
    #[serde(default)]
    resource: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ThrottleArgs {
    count: u32,
    #[serde(default)]
    retry_after: Option<u32>,
    #[serde(default)]
    plain: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutageArgs {
    #[serde(rename = "for")]
    duration: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookOutageArgs {
    mode: String,
    #[serde(default)]
    webhook: Option<String>,
    #[serde(rename = "for")]
    duration: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestartArgs {
    #[serde(default)]
    server: usize,
    #[serde(default)]
    kill: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BookmarkArgs {
    interval: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpireContinueArgs {
    #[serde(rename = "for", default)]
    duration: Option<Dur>,
    #[serde(default)]
    count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TooLargeArgs {
    #[serde(rename = "for")]
    duration: Dur,
    #[serde(default)]
    behind: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LagArgs {
    #[serde(default)]
    server: usize,
    lag: Dur,
    #[serde(rename = "for")]
    duration: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
struct PauseArgs {
    client: String,
    #[serde(rename = "for")]
    duration: Dur,
    #[serde(default)]
    until_closed: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EtcdKillArgs {
    #[serde(default)]
    member: Option<usize>,
    restart_after: Dur,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BreakArgs {
    kind: String,
}

/// A scenario that cannot be run, with where in the file.
#[derive(Debug)]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.position {
            Some((line, column)) => write!(f, "{}:{line}:{column}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Reads a scenario (`file` names it in errors).
#[cfg(test)]
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    parse_with_backend(file, text, None)
}

/// Reads a scenario, run on `backend` (`ephemeral`, `embedded`, `etcd`) instead of its own when
/// given; its faults are checked against that backend.
pub fn parse_with_backend(file: &str, text: &str, backend: Option<&str>) -> Result<Scenario, ScenarioError> {
    let error = |e: serde_yaml_ng::Error| {
        // The location is reported apart; serde_yaml_ng repeats it at the end of the message.
        let message = e.to_string().split(" at line ").next().unwrap_or_default().to_string();
        // serde_yaml_ng places errors raised by our own checks (a duration, a fault the
        // backend cannot do) at the start of the document: find what they name instead.
        let position = match e.location().map(|l| (l.line(), l.column())) {
            Some((1, 1)) | None => locate(text, &message).or(e.location().map(|l| (l.line(), l.column()))),
            found => found,
        };
        ScenarioError { file: file.to_string(), position, message }
    };
    // The backend first: fault steps are checked against it as they are read.
    #[derive(Deserialize)]
    struct BackendOnly {
        #[serde(default)]
        backend: BackendSpec,
    }
    let mut spec = serde_yaml_ng::from_str::<BackendOnly>(text).map_err(error)?.backend;
    let kind = match backend {
        None => None,
        Some(name) => Some(serde_yaml_ng::from_str::<BackendKind>(name).map_err(|_| ScenarioError {
            file: file.to_string(),
            position: None,
            message: format!("--backend {name}: expected ephemeral, embedded or etcd"),
        })?),
    };
    if let Some(kind) = kind {
        spec.kind = kind;
    }
    BACKEND.with(|b| b.set((spec.kind, spec.servers, spec.members)));
    let mut scenario: Scenario = serde_yaml_ng::from_str(text).map_err(error)?;
    if let Some(kind) = kind {
        scenario.backend.kind = kind;
    }
    let refuse = |message: String| Err(ScenarioError { file: file.to_string(), position: None, message });
    if scenario.backend.kind != BackendKind::Etcd && (scenario.backend.members != 1 || scenario.backend.servers != 1) {
        return refuse("backend: several etcd members or servers need `kind: etcd`".into());
    }
    if !matches!(scenario.backend.members, 1 | 3) {
        return refuse(format!("backend.members: {} members; expected 1 or 3", scenario.backend.members));
    }
    if scenario.clients.is_empty() && scenario.commands.is_empty() {
        return refuse("clients: a scenario needs at least one client or command".into());
    }
    if scenario.backend.servers == 0 {
        return refuse("backend.servers: 0 servers; expected 1 or more".into());
    }
    let client_ids: Vec<String> =
        scenario.clients.iter().flat_map(|c| (0..c.count).map(move |i| format!("{}-{i}", c.name))).collect();
    for step in &scenario.faults {
        if let Fault::PauseClient { client, .. } = &step.fault
            && !client_ids.contains(client)
        {
            return refuse(format!("pauseClient: no client {client:?}; the clients are {}", client_ids.join(", ")));
        }
    }
    for command in &scenario.commands {
        if let Some(work) = command.work()
            && let Err(why) = listwatch_apiextensions::schema::cel::compiles(&work.cel)
        {
            return refuse(format!("commands: {}: expect.cel {:?} does not compile: {why}", command.name, work.cel));
        }
    }
    if let Err(why) = scenario.audit.validate() {
        return refuse(format!("audit: {why}"));
    }
    if !(scenario.workload.rate > 0.0 && scenario.workload.rate.is_finite()) {
        return refuse(format!("workload.rate: {}; expected writes per second above 0", scenario.workload.rate));
    }
    Ok(scenario)
}

/// Where the first thing `message` quotes (`"10 parsecs"`, `` `restartServer` ``, or the
/// fault it names) first appears in `text`, as a 1-based line and column.
fn locate(text: &str, message: &str) -> Option<(usize, usize)> {
    let quoted = |open: char, close: char| {
        let start = message.find(open)? + 1;
        let end = message[start..].find(close)? + start;
        Some(&message[start..end])
    };
    let named = FAULT_KEYS.iter().copied().find(|key| message.starts_with(key));
    let needle = quoted('"', '"').or_else(|| quoted('`', '`')).or(named)?;
    let offset = text.find(needle)?;
    let line = text[..offset].matches('\n').count() + 1;
    let column = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name: churn
seed: 7
duration: 10s
backend: {kind: embedded}
workload: {objects: 5, rate: 10}
clients:
  - {name: plain, count: 2}
  - {name: streaming, mode: streaming-list, selector: app=a}
faults:
  - {at: 2s, compact: {}}
  - {every: 3s, from: 1s, jitter: 500ms, dropWatches: {}}
  - {at: 4s, streams: {fault: latency, ms: 50, for: 1s}}
  - {at: 5s, restartServer: {}}
"#;

    #[test]
    fn a_scenario_reads_with_its_faults_and_times() {
        let s = parse("good.yaml", GOOD).unwrap();
        assert_eq!(s.duration, Dur(Duration::from_secs(10)));
        assert_eq!(s.clients[1].mode, ClientMode::StreamingList);
        assert_eq!(s.faults.len(), 4);
        assert!(matches!(s.faults[0].when, When::At(d) if d == Duration::from_secs(2)));
        assert!(matches!(
            s.faults[1].when,
            When::Every { period, jitter, .. } if period == Duration::from_secs(3) && jitter == Duration::from_millis(500)
        ));
        assert!(matches!(&s.faults[2].fault, Fault::Streams(StreamFault::Latency { ms: 50, .. })));
    }

    fn refusal(text: &str) -> String {
        parse("s.yaml", text).unwrap_err().to_string()
    }

    #[test]
    fn mistakes_are_refused_with_the_line_column_and_what_was_expected() {
        let unknown_fault = "name: x\nduration: 1s\nclients: [{name: a}]\nfaults:\n  - {at: 1s, explode: {}}\n";
        let e = refusal(unknown_fault);
        assert!(e.starts_with("s.yaml:5:"), "{e}");
        assert!(e.contains("unknown field `explode`") && e.contains("compact"), "{e}");

        let bad_duration = "name: x\nduration: 10 parsecs\nclients: [{name: a}]\n";
        let e = refusal(bad_duration);
        assert!(e.starts_with("s.yaml:2:"), "{e}");
        assert!(e.contains("invalid duration \"10 parsecs\""), "{e}");

        let restart_ephemeral =
            "name: x\nduration: 1s\nclients: [{name: a}]\nfaults:\n  - {at: 1s, restartServer: {}}\n";
        let e = refusal(restart_ephemeral);
        assert!(e.starts_with("s.yaml:5:") && e.contains("not `ephemeral`"), "{e}");

        let both = "name: x\nduration: 1s\nclients: [{name: a}]\nfaults:\n  - {at: 1s, every: 2s, compact: {}}\n";
        assert!(refusal(both).contains("not both"));

        let unknown_key = "name: x\nduration: 1s\nclients: [{name: a, colour: red}]\n";
        let e = refusal(unknown_key);
        assert!(e.starts_with("s.yaml:3:") && e.contains("unknown field `colour`"), "{e}");

        let bad_break =
            "name: x\nduration: 1s\nclients: [{name: a}]\nfaults:\n  - {at: 1s, breakWatch: {kind: lose-all}}\n";
        assert!(refusal(bad_break).contains("unknown variant `lose-all`"));

        let no_clients = "name: x\nduration: 1s\nclients: []\n";
        assert!(refusal(no_clients).contains("at least one client or command"));

        let expire = |args: &str| {
            format!("name: x\nduration: 1s\nclients: [{{name: a}}]\nfaults:\n  - {{at: 1s, expireContinue: {args}}}\n")
        };
        assert!(refusal(&expire("{}")).contains("one of `for` (a duration) or `count`"));
        assert!(refusal(&expire("{for: 1s, count: 2}")).contains("one of `for` (a duration) or `count`"));
        let counted = parse("s.yaml", &expire("{count: 2}")).unwrap();
        assert!(matches!(counted.faults[0].fault, Fault::ExpireContinue(ContinueExpiry::Next(2))));

        let outage = |args: &str| {
            format!("name: x\nduration: 1s\nclients: [{{name: a}}]\nfaults:\n  - {{at: 1s, webhookOutage: {args}}}\n")
        };
        assert!(refusal(&outage("{mode: sideways, for: 1s}")).contains("unknown variant `sideways`"));
        assert!(refusal(&outage("{mode: down}")).contains("missing field `for`"));
        let down = parse("s.yaml", &outage("{mode: down, webhook: a.example.com, for: 2s}")).unwrap();
        assert!(matches!(
            &down.faults[0].fault,
            Fault::WebhookOutage { mode, webhook: Some(w), duration } if mode == "down" && w == "a.example.com" && duration.0 == Duration::from_secs(2)
        ));
    }

    #[test]
    fn every_shipped_scenario_reads() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut read = 0;
        for dir in [root.join("scenarios"), root.join("tests/zoo/scenarios")] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "yaml") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    parse(&path.display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
                    read += 1;
                }
            }
        }
        assert!(read >= 25, "{read} scenarios");
    }
}
