//! The part of a kubeconfig a conformance run needs: the current context's server URL, its
//! bearer token (inline or from a file), and its TLS material (used only with the `tls`
//! feature). Exec plugins and auth providers are not run; put a token in the kubeconfig or
//! pass one, or go through `kubectl proxy`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("parsing {path}: {source}")]
    Parse { path: PathBuf, source: serde_yaml_ng::Error },
    #[error("{0}")]
    Incomplete(String),
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct File {
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
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
}

#[derive(Deserialize, Default, Clone)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
struct User {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, serde_yaml_ng::Value>,
}

/// What a kubeconfig's current context says about reaching its server.
#[derive(Clone, Debug, Default)]
// The TLS material is only used by builds with the `tls` feature.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub struct Kubeconfig {
    pub server: String,
    pub token: Option<String>,
    /// PEM bytes of the CA that signed the server's certificate.
    pub certificate_authority: Option<Vec<u8>>,
    pub insecure_skip_tls_verify: bool,
    /// PEM bytes of the client certificate followed by its key.
    pub client_identity: Option<Vec<u8>>,
}

impl Kubeconfig {
    /// Reads the current context of the kubeconfig at `path`. Relative file references are
    /// resolved against the kubeconfig's directory, as kubectl does.
    pub fn load(path: &Path) -> Result<Kubeconfig, KubeconfigError> {
        let read = |p: &Path| std::fs::read(p).map_err(|source| KubeconfigError::Read { path: p.to_owned(), source });
        let text = read(path)?;
        let file: File = serde_yaml_ng::from_slice(&text)
            .map_err(|source| KubeconfigError::Parse { path: path.to_owned(), source })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &Path| if p.is_absolute() { p.to_owned() } else { base.join(p) };
        let incomplete = |what: String| KubeconfigError::Incomplete(format!("{}: {what}", path.display()));

        if file.current_context.is_empty() {
            return Err(incomplete("no current-context".into()));
        }
        let context = find(&file.contexts, &file.current_context)
            .ok_or_else(|| incomplete(format!("no context named {:?}", file.current_context)))?;
        let cluster = find(&file.clusters, &context.cluster)
            .ok_or_else(|| incomplete(format!("no cluster named {:?}", context.cluster)))?;
        let user = find(&file.users, &context.user).unwrap_or_default();
        if cluster.server.is_empty() {
            return Err(incomplete(format!("cluster {:?} has no server", context.cluster)));
        }
        if user.token.is_none() && user.token_file.is_none() && user.other.contains_key("exec") {
            return Err(incomplete(format!(
                "user {:?} authenticates with an exec plugin, which this tool does not run; pass --token or use `kubectl proxy`",
                context.user
            )));
        }
        let token = match (user.token, user.token_file) {
            (Some(token), _) => Some(token),
            (None, Some(file)) => Some(String::from_utf8_lossy(&read(&resolve(&file))?).trim().to_string()),
            (None, None) => None,
        };
        let pem = |data: Option<String>, file: Option<PathBuf>| -> Result<Option<Vec<u8>>, KubeconfigError> {
            match (data, file) {
                (Some(data), _) => {
                    base64_decode(&data).map(Some).ok_or_else(|| incomplete("invalid base64 in a *-data field".into()))
                }
                (None, Some(file)) => read(&resolve(&file)).map(Some),
                (None, None) => Ok(None),
            }
        };
        let certificate_authority = pem(cluster.certificate_authority_data, cluster.certificate_authority)?;
        let certificate = pem(user.client_certificate_data, user.client_certificate)?;
        let key = pem(user.client_key_data, user.client_key)?;
        let client_identity = match (certificate, key) {
            (Some(mut certificate), Some(key)) => {
                certificate.push(b'\n');
                certificate.extend_from_slice(&key);
                Some(certificate)
            }
            _ => None,
        };
        Ok(Kubeconfig {
            server: cluster.server.trim_end_matches('/').to_string(),
            token,
            certificate_authority,
            insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
            client_identity,
        })
    }
}

/// The entry called `name`, if it has a value.
fn find<T: Clone>(list: &[Named<T>], name: &str) -> Option<T> {
    list.iter().find(|n| n.name == name).and_then(|n| n.value.clone())
}

/// Standard base64 as kubeconfig `*-data` fields hold it (line breaks tolerated).
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_listwatch_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: listwatch\n  cluster:\n    server: http://127.0.0.1:8080/\ncontexts:\n- name: listwatch\n  context:\n    cluster: listwatch\n    user: listwatch\n    namespace: default\ncurrent-context: listwatch\nusers:\n- name: listwatch\n  user: {}\n",
        )
        .unwrap();
        let config = Kubeconfig::load(&path).unwrap();
        assert_eq!(config.server, "http://127.0.0.1:8080");
        assert_eq!(config.token, None);
    }

    #[test]
    fn reads_token_file_and_ca_data() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "abc\n").unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n    certificate-authority-data: aGVsbG8=\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user:\n    tokenFile: token\n",
        )
        .unwrap();
        let config = Kubeconfig::load(&path).unwrap();
        assert_eq!(config.token.as_deref(), Some("abc"));
        assert_eq!(config.certificate_authority.as_deref(), Some(&b"hello"[..]));
    }

    #[test]
    fn base64_data_tolerates_line_breaks() {
        assert_eq!(base64_decode("aGVs\nbG8=\n").unwrap(), b"hello");
        assert_eq!(base64_decode("a$"), None);
    }
}
