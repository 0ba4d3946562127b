//! Connection settings, from a kubeconfig, the in-cluster service account, or by hand.
//!
//! [`Config::infer`] looks where client-go's default loading rules look: the `KUBECONFIG`
//! variable (a `:`-separated list, merged with the first file to define a name winning), then
//! `~/.kube/config`, then the in-cluster service account. From the chosen context it takes the
//! server URL, the default namespace, and the credentials: a bearer token (inline, or a
//! `tokenFile` that is re-read as it rotates), HTTP basic auth, a client certificate and key
//! (inline `*-data` or files; relative paths resolve against the kubeconfig's directory), the CA
//! bundle, `tls-server-name` and `insecure-skip-tls-verify`, and exec credential plugins (the
//! `exec` entry EKS, GKE and AKS write; run by [`crate::exec`] when a request needs credentials).
//!
//! Not supported: auth providers (the long-removed `auth-provider` entries; a kubeconfig that only
//! has one is refused with a clear message), proxies, impersonation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;
use crate::exec::{ExecCluster, ExecConfig, InteractiveMode};

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
    /// An exec credential plugin, run when credentials are needed: a bearer token, or a client
    /// certificate for the TLS handshake.
    Exec(Box<ExecConfig>),
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
    proxy_url: Option<String>,
    #[serde(default)]
    disable_compression: bool,
    /// Named extensions; `client.authentication.k8s.io/exec`'s goes to exec plugins.
    #[serde(default)]
    extensions: Vec<serde_yaml_ng::Value>,
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
            // A command with a path separator is a path (relative to the kubeconfig); a bare name
            // is looked up in PATH (client-go's `ResolvePaths`).
            if let Some(command) = user.exec.as_mut().and_then(|exec| exec.get_mut("command"))
                && let Some(text) = command.as_str()
                && text.contains('/')
                && Path::new(text).is_relative()
            {
                *command = serde_yaml_ng::Value::from(base.join(text).display().to_string());
            }
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
        let ca_pem = pem(cluster.certificate_authority_data.clone(), cluster.certificate_authority.clone())?;
        let mut config = Config::new(&cluster.server);
        if let Some(ns) = context.namespace.filter(|ns| !ns.is_empty()) {
            config.default_namespace = ns;
        }
        config.auth = match (user.token, user.token_file, user.username, user.password, &user.exec) {
            (Some(token), _, _, _, _) if !token.is_empty() => Auth::BearerToken(token),
            (_, Some(file), _, _, _) => Auth::BearerTokenFile(file),
            (_, _, Some(username), Some(password), _) => Auth::Basic { username, password },
            (_, _, _, _, Some(exec)) => {
                Auth::Exec(Box::new(exec_config(exec, &context.user, &cluster, ca_pem.as_deref())?))
            }
            _ if user.auth_provider.is_some() => {
                return Err(Error::Config(format!(
                    "user {:?} authenticates through an auth provider, which this client does not run \
                     (kubectl dropped them too: use the provider's exec plugin, e.g. kubelogin or gke-gcloud-auth-plugin)",
                    context.user
                )));
            }
            _ => Auth::None,
        };
        config.tls = TlsSettings {
            ca_pem,
            client_cert_pem: pem(user.client_certificate_data, user.client_certificate)?,
            client_key_pem: pem(user.client_key_data, user.client_key)?,
            insecure_skip_verify: cluster.insecure_skip_tls_verify,
            server_name: cluster.tls_server_name.filter(|n| !n.is_empty()),
        };
        Ok(config)
    }
}

/// The `exec` entry of `user`, as kubectl reads it: `apiVersion` and `command` required,
/// `interactiveMode` required for `v1`, the cluster described only with `provideClusterInfo`.
fn exec_config(
    exec: &serde_yaml_ng::Value,
    user: &str,
    cluster: &Cluster,
    ca_pem: Option<&[u8]>,
) -> Result<ExecConfig, Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        #[serde(default)]
        api_version: String,
        #[serde(default)]
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: Vec<EnvVar>,
        interactive_mode: Option<String>,
        #[serde(default)]
        provide_cluster_info: bool,
        install_hint: Option<String>,
    }
    #[derive(Deserialize)]
    struct EnvVar {
        name: String,
        #[serde(default)]
        value: String,
    }
    let invalid = |why: String| Error::Config(format!("user {user:?}: exec: {why}"));
    let entry: Entry = serde_yaml_ng::from_value(exec.clone()).map_err(|e| invalid(e.to_string()))?;
    if entry.command.is_empty() {
        return Err(invalid("no command".into()));
    }
    if !crate::exec::SUPPORTED_API_VERSIONS.contains(&entry.api_version.as_str()) {
        return Err(invalid(format!(
            "apiVersion {:?} is not one this client speaks ({})",
            entry.api_version,
            crate::exec::SUPPORTED_API_VERSIONS.join(", ")
        )));
    }
    let interactive_mode = match entry.interactive_mode.as_deref() {
        Some("Never") => InteractiveMode::Never,
        Some("IfAvailable") => InteractiveMode::IfAvailable,
        Some("Always") => InteractiveMode::Always,
        None if entry.api_version.ends_with("/v1") => {
            return Err(invalid(format!("interactiveMode must be set for {}", entry.api_version)));
        }
        None => InteractiveMode::IfAvailable,
        Some(other) => return Err(invalid(format!("interactiveMode {other:?} is not Never, IfAvailable or Always"))),
    };
    let cluster_info = entry.provide_cluster_info.then(|| ExecCluster {
        server: cluster.server.clone(),
        tls_server_name: cluster.tls_server_name.clone().filter(|n| !n.is_empty()),
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
        certificate_authority_data: ca_pem.map(<[u8]>::to_vec),
        proxy_url: cluster.proxy_url.clone().filter(|p| !p.is_empty()),
        disable_compression: cluster.disable_compression,
        config: exec_extension(&cluster.extensions),
    });
    Ok(ExecConfig {
        api_version: entry.api_version,
        command: entry.command,
        args: entry.args,
        env: entry.env.into_iter().map(|var| (var.name, var.value)).collect(),
        interactive_mode,
        install_hint: entry.install_hint.filter(|h| !h.trim().is_empty()),
        cluster: cluster_info,
    })
}

/// The cluster's `client.authentication.k8s.io/exec` extension, as JSON.
fn exec_extension(extensions: &[serde_yaml_ng::Value]) -> Option<serde_json::Value> {
    let extension = extensions
        .iter()
        .find(|e| e.get("name").and_then(serde_yaml_ng::Value::as_str) == Some("client.authentication.k8s.io/exec"))?
        .get("extension")?;
    serde_json::to_value(extension).ok()
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
    fn reads_exec_plugins_as_eks_writes_them_and_refuses_auth_providers() {
        let dir = tempfile::tempdir().unwrap();
        let clusters =
            "clusters:\n- name: c\n  cluster:\n    server: 'https://h'\n    certificate-authority-data: aGVs\n";
        let context = "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n";
        let eks = "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args: [--region, eu-west-1, eks, get-token, --cluster-name, demo]\n      env:\n      - name: AWS_PROFILE\n        value: dev\n      provideClusterInfo: false\n";
        let path = write(dir.path(), "eks", &format!("{clusters}{context}{eks}"));
        let Auth::Exec(exec) = Config::from_kubeconfig(&path).unwrap().auth else { panic!("an exec plugin") };
        assert_eq!(exec.command, "aws");
        assert_eq!(exec.command_line(), "aws --region eu-west-1 eks get-token --cluster-name demo");
        assert_eq!(exec.env, [("AWS_PROFILE".to_string(), "dev".to_string())]);
        assert_eq!(exec.interactive_mode, InteractiveMode::IfAvailable, "v1beta1's default");
        assert_eq!(exec.cluster, None, "no cluster info unless asked for");

        let asking = "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: bin/plugin\n      interactiveMode: Never\n      provideClusterInfo: true\n";
        let path = write(dir.path(), "asking", &format!("{clusters}{context}{asking}"));
        let Auth::Exec(exec) = Config::from_kubeconfig(&path).unwrap().auth else { panic!("an exec plugin") };
        assert_eq!(exec.command, dir.path().join("bin/plugin").display().to_string());
        let cluster = exec.cluster.expect("cluster info");
        assert_eq!(
            (cluster.server.as_str(), cluster.certificate_authority_data.as_deref()),
            ("https://h", Some(&b"hel"[..]))
        );

        let provider = "users:\n- name: u\n  user:\n    auth-provider: {name: gcp}\n";
        let path = write(dir.path(), "provider", &format!("{clusters}{context}{provider}"));
        let err = Config::from_kubeconfig(&path).unwrap_err();
        assert!(err.to_string().contains("auth provider"), "{err}");
    }
}
