//! The kubeconfig `serve` writes: a `listwatch` cluster, user and context, in a file of its own
//! (`~/.kube/listwatch-config` by default) and, with `--kubeconfig-merge`, merged into the
//! user's kubeconfig as kind merges its clusters.
//!
//! Written with a YAML library rather than by hand, so any server URL, path or token comes out
//! quoted as YAML needs. serde_yaml_ng: serde_yaml is unmaintained (archived in 2024);
//! serde_yaml_ng is its maintained fork with the same API, and the client crate already reads
//! kubeconfigs with it, so one YAML library serves the workspace.
//!
//! A plain-HTTP cluster also says `insecure-skip-tls-verify: true`: kubectl ignores it for
//! `http://`, but the official JavaScript client refuses an `http://` server without it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use base64::Engine as _;
use serde::Serialize;
use serde_yaml_ng::{Mapping, Value};

/// The cluster, user and context name.
pub const NAME: &str = "listwatch";

/// Where `serve` writes its kubeconfig unless told otherwise.
pub fn default_path() -> PathBuf {
    home().join(".kube").join("listwatch-config")
}

pub fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."))
}

/// How the kubeconfig's user authenticates.
pub enum Credentials {
    Token(String),
    /// PEM certificate and key.
    ClientCertificate {
        cert: String,
        key: String,
    },
}

/// What the `listwatch` entries say.
pub struct Entry {
    pub server: String,
    /// PEM CA bundle for an `https://` server.
    pub ca_pem: Option<Vec<u8>>,
    pub credentials: Credentials,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate_authority_data: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure_skip_tls_verify: bool,
}

#[derive(Serialize)]
struct KubeContext {
    cluster: &'static str,
    user: &'static str,
    namespace: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_certificate_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_key_data: Option<String>,
}

impl Entry {
    /// The `(clusters, contexts, users)` entries, each `{name, cluster|context|user}`.
    fn named_entries(&self) -> anyhow::Result<[(&'static str, Value); 3]> {
        let base64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let https = self.server.starts_with("https://");
        let cluster = Cluster {
            server: self.server.clone(),
            certificate_authority_data: self.ca_pem.as_deref().filter(|_| https).map(base64),
            insecure_skip_tls_verify: !https,
        };
        let context = KubeContext { cluster: NAME, user: NAME, namespace: "default" };
        let user = match &self.credentials {
            Credentials::Token(token) => {
                User { token: Some(token.clone()), client_certificate_data: None, client_key_data: None }
            }
            Credentials::ClientCertificate { cert, key } => User {
                token: None,
                client_certificate_data: Some(base64(cert.as_bytes())),
                client_key_data: Some(base64(key.as_bytes())),
            },
        };
        let named = |kind: &str, value: Value| {
            let mut entry = Mapping::new();
            entry.insert("name".into(), NAME.into());
            entry.insert(kind.into(), value);
            Value::Mapping(entry)
        };
        Ok([
            ("clusters", named("cluster", serde_yaml_ng::to_value(cluster)?)),
            ("contexts", named("context", serde_yaml_ng::to_value(context)?)),
            ("users", named("user", serde_yaml_ng::to_value(user)?)),
        ])
    }
}

/// Writes a kubeconfig holding only the `listwatch` entries, current.
pub fn write(path: &Path, entry: &Entry) -> anyhow::Result<()> {
    let mut config = Mapping::new();
    config.insert("apiVersion".into(), "v1".into());
    config.insert("kind".into(), "Config".into());
    for (list, value) in entry.named_entries()? {
        config.insert(list.into(), Value::Sequence(vec![value]));
    }
    config.insert("current-context".into(), NAME.into());
    write_file(path, &Value::Mapping(config))
}

/// The file kubectl would add new entries to, as kind picks it: `$KUBECONFIG`'s first file that
/// exists (its last one if none does), else `~/.kube/config`.
pub fn merge_target() -> PathBuf {
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|list| std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    if listed.is_empty() {
        return home().join(".kube").join("config");
    }
    listed.iter().find(|p| p.is_file()).unwrap_or_else(|| listed.last().expect("not empty")).clone()
}

/// Adds the `listwatch` entries to the kubeconfig at `path`, replacing entries of that name and
/// keeping everything else. Its current-context is set only if it had none: unlike kind, which
/// switches to the cluster it creates, starting a local server should not redirect every later
/// kubectl away from the cluster the user was working on.
pub fn merge(path: &Path, entry: &Entry) -> anyhow::Result<()> {
    let _lock = Lock::take(path)?;
    let mut config = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Value::Mapping(Mapping::new()),
        Ok(text) => serde_yaml_ng::from_str(&text).with_context(|| format!("parsing {}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Mapping(Mapping::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let Value::Mapping(map) = &mut config else { bail!("{} is not a kubeconfig (not a YAML mapping)", path.display()) };
    // What kind adds for clients that need them (the JavaScript client).
    for (key, value) in [("apiVersion", "v1"), ("kind", "Config")] {
        if map.get(key).is_none_or(Value::is_null) {
            map.insert(key.into(), value.into());
        }
    }
    for (list, value) in entry.named_entries()? {
        let slot = map.entry(list.into()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = Value::Sequence(Vec::new());
        }
        let Value::Sequence(items) = slot else { bail!("{}: {list} is not a list", path.display()) };
        match items.iter_mut().find(|item| item.get("name").and_then(Value::as_str) == Some(NAME)) {
            Some(existing) => *existing = value,
            None => items.push(value),
        }
    }
    if map.get("current-context").and_then(Value::as_str).is_none_or(str::is_empty) {
        map.insert("current-context".into(), NAME.into());
    }
    write_file(path, &config)
}

/// Writes in place (an existing file keeps its mode and stays where a symlink points); a new
/// file is readable by its owner only, as it may hold a key or token.
fn write_file(path: &Path, config: &Value) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let text = serde_yaml_ng::to_string(config)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("writing the kubeconfig {}", path.display()))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .with_context(|| format!("writing the kubeconfig {}", path.display()))
}

/// client-go's kubeconfig lock: `<file>.lock`, created exclusively, removed when done.
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> anyhow::Result<Lock> {
        let mut lock = path.as_os_str().to_owned();
        lock.push(".lock");
        let lock = PathBuf::from(lock);
        if let Some(parent) = lock.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::OpenOptions::new().write(true).create_new(true).open(&lock).with_context(|| {
            format!("locking the kubeconfig: {} (remove it if no kubectl is running)", lock.display())
        })?;
        Ok(Lock(lock))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str) -> Entry {
        Entry { server: server.into(), ca_pem: None, credentials: Credentials::Token("t: with colon".into()) }
    }

    #[test]
    fn plain_http_says_insecure_skip_tls_verify_and_parses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        write(&path, &entry("http://127.0.0.1:8080")).unwrap();
        let config = listwatch_client::Config::from_kubeconfig(&path).unwrap();
        assert_eq!(config.server, "http://127.0.0.1:8080");
        assert_eq!(config.auth, listwatch_client::Auth::BearerToken("t: with colon".into()));
        assert!(config.tls.insecure_skip_verify);
        let https = Entry { ca_pem: Some(b"PEM".to_vec()), ..entry("https://[::1]:6443") };
        write(&path, &https).unwrap();
        let config = listwatch_client::Config::from_kubeconfig(&path).unwrap();
        assert!(!config.tls.insecure_skip_verify);
        assert_eq!(config.tls.ca_pem.as_deref(), Some(&b"PEM"[..]));
    }

    #[test]
    fn merge_replaces_our_entries_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\npreferences: {colors: true}\ncurrent-context: prod\nclusters:\n- name: prod\n  cluster: {server: 'https://prod'}\n- name: listwatch\n  cluster: {server: 'http://old'}\ncontexts:\n- name: prod\n  context: {cluster: prod, user: admin}\nusers:\n- name: admin\n  user: {token: secret}\n",
        )
        .unwrap();
        merge(&path, &entry("http://127.0.0.1:9999")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let config: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(config["current-context"], "prod", "{text}");
        assert_eq!(config["preferences"]["colors"], true);
        assert_eq!(config["clusters"].as_sequence().unwrap().len(), 2, "{text}");
        assert_eq!(config["clusters"][1]["cluster"]["server"], "http://127.0.0.1:9999");
        assert_eq!(config["users"][0]["user"]["token"], "secret");
        let ours = listwatch_client::Config::from_kubeconfig_files(std::slice::from_ref(&path), Some(NAME)).unwrap();
        assert_eq!(ours.server, "http://127.0.0.1:9999");
        assert!(!dir.path().join("config.lock").exists());
    }

    #[test]
    fn merge_into_nothing_makes_ours_current() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("config");
        merge(&path, &entry("http://127.0.0.1:1")).unwrap();
        assert_eq!(listwatch_client::Config::from_kubeconfig(&path).unwrap().server, "http://127.0.0.1:1");
        std::fs::write(&path, "").unwrap();
        merge(&path, &entry("http://127.0.0.1:2")).unwrap();
        assert_eq!(listwatch_client::Config::from_kubeconfig(&path).unwrap().server, "http://127.0.0.1:2");
    }

    #[test]
    fn a_held_lock_refuses_the_merge() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(dir.path().join("config.lock"), "").unwrap();
        let error = merge(&path, &entry("http://x")).unwrap_err();
        assert!(format!("{error:#}").contains("locking the kubeconfig"), "{error:#}");
    }
}
