//! Connection settings, from a kubeconfig, the in-cluster service account, or by hand.
//!
//! [`Config::infer`] looks where client-go's default loading rules look: the `KUBECONFIG`
//! variable (a `:`-separated list, merged with the first file to define a name winning), then
//! `~/.kube/config`, then the in-cluster service account. From the chosen context it takes the
//! server URL, the default namespace, and the credentials: a bearer token (inline, or a
//! `tokenFile` that is re-read as it rotates), HTTP basic auth, a client certificate and key
//! (inline `*-data` or files; relative paths resolve against the kubeconfig's directory), the CA
//! bundle, `tls-server-name` and `insecure-skip-tls-verify`.
//!
//! Not supported: exec credential plugins and auth providers (a kubeconfig that only has those is
//! refused with a clear message), proxies, impersonation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;

/// Which HTTP versions to speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTPS: offer `h2` and `http/1.1` through ALPN and use what the server picks; plain HTTP:
    /// HTTP/1.1. This is what Go's client (and so client-go) does.
    #[default]
    Auto,
    /// HTTP/1.1 only, also over TLS.
    Http1Only,
    /// HTTP/2 only: ALPN `h2` over TLS, prior knowledge (h2c) over plain HTTP.
    Http2Only,
}

/// How requests authenticate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Auth {
    /// No credentials: the request is anonymous.
    #[default]
    None,
    /// `Authorization: Bearer <token>`.
    BearerToken(String),
    /// A token in a file, re-read at most once a minute so rotated tokens are picked up
    /// (client-go's `CachedFileTokenSource`).
    BearerTokenFile(PathBuf),
    /// `Authorization: Basic`.
    Basic {
        /// Sent with the password in every request's `Authorization` header.
        username: String,
        /// The user's password, sent with every request (so only over TLS).
        password: String,
    },
}

/// TLS material. Only used for `https://` servers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM CA bundle. When set it is the only trust root, as in client-go; when not, the
    /// Mozilla roots (webpki-roots) are trusted.
    pub ca_pem: Option<Vec<u8>>,
    /// PEM client certificate chain, presented with `client_key_pem` (x509 authentication).
    pub client_cert_pem: Option<Vec<u8>>,
    /// PEM private key of the client certificate.
    pub client_key_pem: Option<Vec<u8>>,
    /// Accept any server certificate (kubeconfig `insecure-skip-tls-verify`).
    pub insecure_skip_verify: bool,
    /// Verify the certificate against this name instead of the URL's host (`tls-server-name`).
    pub server_name: Option<String>,
}

/// Everything needed to build a [`Client`](crate::Client).
#[derive(Clone, Debug)]
pub struct Config {
    /// `https://host:port[/prefix]` or `http://...`.
    pub server: String,
    /// The context's namespace, else `default`.
    pub default_namespace: String,
    /// The credentials every request carries.
    pub auth: Auth,
    /// Trust roots and client certificates for `https://` servers.
    pub tls: TlsSettings,
    /// Which HTTP versions to speak.
    pub http_version: HttpVersion,
    /// TCP connect timeout (client-go's dialer uses 30 s).
    pub connect_timeout: Duration,
    /// Limit for each non-watch request (GET, LIST, writes), headers and body. `None`: no limit
    /// (client-go's default). Watches have their own idle limit, see
    /// [`WatchParams::idle_timeout`](crate::WatchParams::idle_timeout).
    pub request_timeout: Option<Duration>,
    /// The `User-Agent` header, which the server logs and audits requests under.
    pub user_agent: String,
}

impl Config {
    /// Settings for `server` with no credentials.
    pub fn new(server: &str) -> Config {
        Config {
            server: server.trim_end_matches('/').to_owned(),
            default_namespace: "default".to_owned(),
            auth: Auth::None,
            tls: TlsSettings::default(),
            http_version: HttpVersion::Auto,
            connect_timeout: Duration::from_secs(30),
            request_timeout: None,
            user_agent: format!("listwatch-client/{}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// client-go's default loading rules: `KUBECONFIG`, `~/.kube/config`, then in-cluster.
    pub fn infer() -> Result<Config, Error> {
        if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            let paths: Vec<PathBuf> = std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()).collect();
            return Config::from_kubeconfig_files(&paths, None);
        }
        if let Some(home) = std::env::var_os("HOME") {
            let path = Path::new(&home).join(".kube").join("config");
            if path.exists() {
                return Config::from_kubeconfig(&path);
            }
        }
        Config::in_cluster()
    }

    /// The current context of one kubeconfig file.
    pub fn from_kubeconfig(path: &Path) -> Result<Config, Error> {
        Config::from_kubeconfig_files(&[path.to_owned()], None)
    }

    /// A named context (or the current one) of merged kubeconfig files: for every cluster,
    /// context and user name the first file that defines it wins, and so does the first
    /// `current-context` (client-go's merge rules, simplified to whole entries).
    pub fn from_kubeconfig_files(paths: &[PathBuf], context: Option<&str>) -> Result<Config, Error> {
        let mut merged = Kubeconfig::default();
        let mut found = false;
        for path in paths {
            let text = match std::fs::read(path) {
                Ok(text) => text,
                // client-go skips listed files that do not exist.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && paths.len() > 1 => continue,
                Err(e) => return Err(Error::Config(format!("reading {}: {e}", path.display()))),
            };
            found = true;
            let mut file: Kubeconfig = serde_yaml_ng::from_slice(&text)
                .map_err(|e| Error::Config(format!("parsing {}: {e}", path.display())))?;
            let base = path.parent().unwrap_or(Path::new(".")).to_owned();
            file.resolve_paths(&base);
            merged.merge(file);
        }
        if !found {
            return Err(Error::Config("none of the kubeconfig files exist".into()));
        }
        merged.into_config(context)
    }

    /// The pod's service account: `KUBERNETES_SERVICE_HOST`/`_PORT`, the token file, CA and
    /// namespace under `/var/run/secrets/kubernetes.io/serviceaccount`.
    pub fn in_cluster() -> Result<Config, Error> {
        const DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
        let host = std::env::var("KUBERNETES_SERVICE_HOST")
            .map_err(|_| Error::Config("no kubeconfig found and not running in a cluster".into()))?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
        let host = if host.contains(':') { format!("[{host}]") } else { host };
        let mut config = Config::new(&format!("https://{host}:{port}"));
        config.auth = Auth::BearerTokenFile(Path::new(DIR).join("token"));
        config.tls.ca_pem = Some(
            std::fs::read(Path::new(DIR).join("ca.crt"))
                .map_err(|e| Error::Config(format!("reading {DIR}/ca.crt: {e}")))?,
        );
        if let Ok(ns) = std::fs::read_to_string(Path::new(DIR).join("namespace")) {
            config.default_namespace = ns.trim().to_owned();
        }
        Ok(config)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default)]
    users: Vec<Named<User>>,
    #[serde(default)]
    current_context: String,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "context", alias = "user")]
    value: Option<T>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    #[serde(default)]
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
}

#[derive(Deserialize, Default, Clone)]
struct Context {
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    user: String,
    namespace: Option<String>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
struct User {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
    username: Option<String>,
    password: Option<String>,
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    exec: Option<serde_yaml_ng::Value>,
    auth_provider: Option<serde_yaml_ng::Value>,
}

impl Kubeconfig {
    fn resolve_paths(&mut self, base: &Path) {
        let resolve = |p: &mut Option<PathBuf>| {
            if let Some(path) = p
                && path.is_relative()
            {
                *path = base.join(&*path);
            }
        };
        for cluster in self.clusters.iter_mut().filter_map(|c| c.value.as_mut()) {
            resolve(&mut cluster.certificate_authority);
        }
        for user in self.users.iter_mut().filter_map(|u| u.value.as_mut()) {
            resolve(&mut user.token_file);
            resolve(&mut user.client_certificate);
            resolve(&mut user.client_key);
        }
    }

    fn merge(&mut self, other: Kubeconfig) {
        fn add<T>(into: &mut Vec<Named<T>>, from: Vec<Named<T>>) {
            for entry in from {
                if !into.iter().any(|e| e.name == entry.name) {
                    into.push(entry);
                }
            }
        }
        add(&mut self.clusters, other.clusters);
        add(&mut self.contexts, other.contexts);
        add(&mut self.users, other.users);
        if self.current_context.is_empty() {
            self.current_context = other.current_context;
        }
    }

    fn into_config(self, context: Option<&str>) -> Result<Config, Error> {
        let context_name = context.unwrap_or(&self.current_context);
        if context_name.is_empty() {
            return Err(Error::Config("the kubeconfig has no current-context".into()));
        }
        let context = find(&self.contexts, context_name)
            .ok_or_else(|| Error::Config(format!("no context named {context_name:?}")))?;
        let cluster = find(&self.clusters, &context.cluster)
            .ok_or_else(|| Error::Config(format!("no cluster named {:?}", context.cluster)))?;
        if cluster.server.is_empty() {
            return Err(Error::Config(format!("cluster {:?} has no server", context.cluster)));
        }
        let user = find(&self.users, &context.user).unwrap_or_default();
        let mut config = Config::new(&cluster.server);
        if let Some(ns) = context.namespace.filter(|ns| !ns.is_empty()) {
            config.default_namespace = ns;
        }
        config.auth = match (user.token, user.token_file, user.username, user.password) {
            (Some(token), _, _, _) if !token.is_empty() => Auth::BearerToken(token),
            (_, Some(file), _, _) => Auth::BearerTokenFile(file),
            (_, _, Some(username), Some(password)) => Auth::Basic { username, password },
            _ if user.exec.is_some() || user.auth_provider.is_some() => {
                return Err(Error::Config(format!(
                    "user {:?} authenticates through an exec plugin or auth provider, which this client does not run; \
                     put a token in the kubeconfig or use `kubectl proxy`",
                    context.user
                )));
            }
            _ => Auth::None,
        };
        config.tls = TlsSettings {
            ca_pem: pem(cluster.certificate_authority_data, cluster.certificate_authority)?,
            client_cert_pem: pem(user.client_certificate_data, user.client_certificate)?,
            client_key_pem: pem(user.client_key_data, user.client_key)?,
            insecure_skip_verify: cluster.insecure_skip_tls_verify,
            server_name: cluster.tls_server_name.filter(|n| !n.is_empty()),
        };
        Ok(config)
    }
}

/// The entry called `name`; a named entry without a body (`- name: u` alone) is an empty one.
fn find<T: Clone + Default>(list: &[Named<T>], name: &str) -> Option<T> {
    list.iter().find(|n| n.name == name).map(|n| n.value.clone().unwrap_or_default())
}

/// Inline base64 data wins over a file, as in client-go.
fn pem(data: Option<String>, file: Option<PathBuf>) -> Result<Option<Vec<u8>>, Error> {
    use base64::Engine as _;
    match (data.filter(|d| !d.is_empty()), file) {
        (Some(data), _) => {
            let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map(Some)
                .map_err(|e| Error::Config(format!("invalid base64 in a *-data field: {e}")))
        }
        (None, Some(path)) => {
            std::fs::read(&path).map(Some).map_err(|e| Error::Config(format!("reading {}: {e}", path.display())))
        }
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_the_listwatch_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "config",
            "apiVersion: v1\nkind: Config\nclusters:\n- name: listwatch\n  cluster:\n    server: http://127.0.0.1:8080/\ncontexts:\n- name: listwatch\n  context:\n    cluster: listwatch\n    user: listwatch\n    namespace: team\ncurrent-context: listwatch\nusers:\n- name: listwatch\n  user:\n    token: abc\n",
        );
        let config = Config::from_kubeconfig(&path).unwrap();
        assert_eq!(config.server, "http://127.0.0.1:8080");
        assert_eq!(config.default_namespace, "team");
        assert_eq!(config.auth, Auth::BearerToken("abc".into()));
    }

    #[test]
    fn resolves_files_relative_to_the_kubeconfig_and_decodes_data() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "token", "t0k\n");
        write(dir.path(), "client.crt", "CERT");
        let path = write(
            dir.path(),
            "config",
            "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n    certificate-authority-data: aGVs\n      bG8=\n    tls-server-name: kubernetes\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user:\n    tokenFile: token\n    client-certificate: client.crt\n    client-key-data: S0VZ\n",
        );
        let config = Config::from_kubeconfig(&path).unwrap();
        assert_eq!(config.default_namespace, "default");
        assert_eq!(config.auth, Auth::BearerTokenFile(dir.path().join("token")));
        assert_eq!(config.tls.ca_pem.as_deref(), Some(&b"hello"[..]));
        assert_eq!(config.tls.client_cert_pem.as_deref(), Some(&b"CERT"[..]));
        assert_eq!(config.tls.client_key_pem.as_deref(), Some(&b"KEY"[..]));
        assert_eq!(config.tls.server_name.as_deref(), Some("kubernetes"));
    }

    #[test]
    fn merges_files_first_wins_and_picks_named_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "a",
            "current-context: one\ncontexts:\n- name: one\n  context: {cluster: c1}\nclusters:\n- name: c1\n  cluster: {server: 'https://one', insecure-skip-tls-verify: true}\n",
        );
        let b = write(
            dir.path(),
            "b",
            "current-context: two\ncontexts:\n- name: two\n  context: {cluster: c2, user: u}\n- name: one\n  context: {cluster: c2}\nclusters:\n- name: c2\n  cluster: {server: 'http://two'}\nusers:\n- name: u\n  user: {username: me, password: pw}\n",
        );
        let missing = dir.path().join("missing");
        let config = Config::from_kubeconfig_files(&[a.clone(), missing, b.clone()], None).unwrap();
        assert_eq!(config.server, "https://one");
        assert!(config.tls.insecure_skip_verify);
        let two = Config::from_kubeconfig_files(&[a, b], Some("two")).unwrap();
        assert_eq!(two.server, "http://two");
        assert_eq!(two.auth, Auth::Basic { username: "me".into(), password: "pw".into() });
    }

    #[test]
    fn refuses_exec_plugins_without_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "config",
            "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: 'https://h'}\nusers:\n- name: u\n  user:\n    exec: {command: gke-gcloud-auth-plugin}\n",
        );
        let err = Config::from_kubeconfig(&path).unwrap_err();
        assert!(err.to_string().contains("exec plugin"), "{err}");
    }
}
