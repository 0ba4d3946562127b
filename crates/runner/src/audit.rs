//! The client audit in a run: every program and every in-process client gets a credential of
//! its own (a token, user `simulate:<name>`), so the servers, which record every request
//! (`--audit-clients`), can tell them apart; at the end (and before a server is restarted,
//! whose records die with it) the runner reads every server's records, merges them, and has
//! the audit's rules judge them against storage's history.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use http::Method;
use listwatch_client::{Auth, Client, Config};
use listwatch_simulator::audit::record::{Request, StreamEnd};
use listwatch_simulator::audit::{self, Report, Thresholds};
use listwatch_simulator::record::HistoryEvent;
use serde_json::Value;

/// The user every runner-side request (writes, history, faults, checks) is made as: not a
/// client under test, so not judged.
pub const RUNNER: &str = "simulate:runner";

/// The credentials of a run: one token per name.
pub struct Identities {
    tokens: BTreeMap<String, String>,
    /// The token file the servers read (`--token-auth-file`).
    pub token_file: PathBuf,
}

impl Identities {
    /// Tokens for the runner and for every name, written to a token file in `dir`.
    pub fn new(dir: &Path, names: impl IntoIterator<Item = String>) -> anyhow::Result<Identities> {
        let mut tokens = BTreeMap::new();
        for name in std::iter::once("runner".to_string()).chain(names) {
            let token = format!("{:032x}", rand::random::<u128>());
            tokens.insert(format!("simulate:{name}"), token);
        }
        let token_file = dir.join("tokens.csv");
        // kube's static token file: token,user,uid[,"group1,group2"].
        let lines: Vec<String> = tokens.iter().map(|(user, token)| format!("{token},{user},{user}")).collect();
        std::fs::write(&token_file, lines.join("\n") + "\n").context("writing the run's token file")?;
        Ok(Identities { tokens, token_file })
    }

    /// The user a name authenticates as.
    pub fn user(name: &str) -> String {
        format!("simulate:{name}")
    }

    fn token(&self, name: &str) -> &str {
        self.tokens.get(&Identities::user(name)).map_or("", String::as_str)
    }

    /// A client of the server whose kubeconfig is `kubeconfig`, authenticated as `name`.
    pub fn client(&self, kubeconfig: &Path, name: &str) -> anyhow::Result<Client> {
        let mut config = Config::from_kubeconfig(kubeconfig).context("reading the server's kubeconfig")?;
        config.auth = Auth::BearerToken(self.token(name).to_owned());
        Ok(Client::new(config)?)
    }

    /// A kubeconfig for the program `name`: the server's, with `name`'s token as its user.
    pub fn kubeconfig(&self, server: &Path, name: &str, dir: &Path) -> anyhow::Result<PathBuf> {
        let text = std::fs::read_to_string(server).context("reading the server's kubeconfig")?;
        let mut config: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&text).context("parsing the server's kubeconfig")?;
        if let Some(users) = config.get_mut("users").and_then(|u| u.as_sequence_mut()) {
            for user in users {
                let mut credentials = serde_yaml_ng::Mapping::new();
                credentials.insert("token".into(), self.token(name).into());
                user["user"] = serde_yaml_ng::Value::Mapping(credentials);
            }
        }
        let path = dir.join(format!("kubeconfig-{}", sanitize(name)));
        std::fs::write(&path, serde_yaml_ng::to_string(&config)?).context("writing a command's kubeconfig")?;
        Ok(path)
    }
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The records read so far: those of servers read before they went away, kept; and the
/// spans whose records went with a server (from the read to the server being gone).
#[derive(Clone, Default)]
pub struct Records(Arc<Mutex<Vec<Request>>>, Arc<Mutex<Vec<(u64, u64)>>>);

impl Records {
    /// Reads `server`'s records before it goes away: its open streams are marked lost (what
    /// they delivered last is not known), and its records kept.
    /// Returns when it read them: what the server serves from then until it is gone is lost
    /// ([`Records::lost_since`]).
    pub async fn keep_before_restart(&self, server: &Client) -> u64 {
        let read_ms = listwatch_apiserver::client_audit::now_ms();
        if let Ok(mut requests) = read(server).await {
            for request in &mut requests {
                if let Some(watch) = &mut request.watch
                    && watch.ended_ms.is_none()
                {
                    watch.ended_ms = Some(listwatch_apiserver::client_audit::now_ms());
                    watch.end = Some(StreamEnd::Lost);
                }
            }
            self.0.lock().expect("records").extend(requests);
        }
        read_ms
    }

    /// Notes that the records of a server read at `read_ms` ([`Records::keep_before_restart`])
    /// miss everything it served from then until now, when it is gone.
    pub fn lost_since(&self, read_ms: u64) {
        self.1.lock().expect("blind spans").push((read_ms, listwatch_apiserver::client_audit::now_ms()));
    }

    /// The spans whose records were lost.
    pub fn blind(&self) -> Vec<(u64, u64)> {
        self.1.lock().expect("blind spans").clone()
    }

    /// Every record: those kept, and every server's now.
    pub async fn all(&self, servers: &[Client]) -> Vec<Request> {
        let mut requests = self.0.lock().expect("records").clone();
        for server in servers {
            match read(server).await {
                Ok(now) => {
                    // A restarted server starts its records again; what was kept before the
                    // restart is older than all of them.
                    requests.extend(now);
                }
                Err(e) => tracing::warn!(error = %e, "could not read a server's client records"),
            }
        }
        requests.retain(|request| request.client != RUNNER);
        requests
    }

    /// Waits until every user of `users` has had a WATCH answered by one of `servers`, or
    /// `deadline` passes; returns the users still not watching.
    pub async fn wait_watching(servers: &[Client], users: &[String], deadline: Duration) -> Vec<String> {
        let give_up = tokio::time::Instant::now() + deadline;
        let mut waiting: Vec<String> = users.to_vec();
        loop {
            for server in servers {
                if let Ok(requests) = read(server).await {
                    waiting.retain(|user| !requests.iter().any(|r| &r.client == user && r.watch.is_some()));
                }
            }
            if waiting.is_empty() || tokio::time::Instant::now() >= give_up {
                return waiting;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// One server's records (`GET /debug/listwatch/clients?records=true`).
async fn read(server: &Client) -> anyhow::Result<Vec<Request>> {
    let (_, body) =
        server.request(Method::GET, "/debug/listwatch/clients?records=true", "application/json", None).await?;
    let answer: Value = serde_json::from_slice(&body).context("the client records are not JSON")?;
    serde_json::from_value(answer["requests"].clone()).context("reading the client records")
}

/// The audit's verdict on a run's records.
pub fn judge(
    requests: &[Request],
    history: &[HistoryEvent],
    epoch_ms: u64,
    stopped: BTreeMap<String, u64>,
    blind: Vec<(u64, u64)>,
    thresholds: &Thresholds,
) -> Report {
    let context = audit::Context { epoch_ms, end_ms: listwatch_apiserver::client_audit::now_ms(), stopped, blind };
    audit::judge(requests, history, &context, thresholds)
}
