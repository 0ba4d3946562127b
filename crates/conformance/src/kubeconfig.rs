//! The part of a kubeconfig a conformance run needs: the current context's server URL, its
//! bearer token (inline or from a file) or exec credential plugin (run by the client crate's
//! [`ExecProvider`](listwatch_client::ExecProvider) when a request needs credentials), and its TLS
//! material. Reading the file is the client crate's kubeconfig loader.

use std::path::{Path, PathBuf};

use listwatch_client::{Auth, Config, ExecConfig, TlsSettings};

/// Why a kubeconfig cannot be used for a run.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The token file the context names could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The token file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// The client crate's loader refused the kubeconfig.
    #[error("{0}")]
    Load(#[from] listwatch_client::Error),
    /// The current context lacks what a run needs (e.g. a server URL).
    #[error("{0}")]
    Incomplete(String),
}

/// What a kubeconfig's current context says about reaching its server.
#[derive(Clone, Debug, Default)]
pub struct Kubeconfig {
    /// The cluster's server URL.
    pub server: String,
    /// The bearer token (inline, or read from the token file).
    pub token: Option<String>,
    /// The exec credential plugin that gives the token, when the kubeconfig has one instead.
    pub exec: Option<ExecConfig>,
    /// The CA, client certificate and verification settings.
    pub tls: TlsSettings,
}

impl Kubeconfig {
    /// Reads the current context of the kubeconfig at `path`.
    pub fn load(path: &Path) -> Result<Kubeconfig, KubeconfigError> {
        let config = Config::from_kubeconfig(path)?;
        let mut exec = None;
        let token = match &config.auth {
            Auth::None => None,
            Auth::Exec(plugin) => {
                exec = Some(ExecConfig::clone(plugin));
                None
            }
            Auth::BearerToken(token) => Some(token.clone()),
            Auth::BearerTokenFile(file) => Some(
                std::fs::read_to_string(file)
                    .map_err(|source| KubeconfigError::Read { path: file.clone(), source })?
                    .trim()
                    .to_string(),
            ),
            Auth::Basic { .. } => {
                return Err(KubeconfigError::Incomplete(format!(
                    "{}: basic authentication is not supported; use a token",
                    path.display()
                )));
            }
        };
        Ok(Kubeconfig { server: config.server.clone(), token, exec, tls: config.tls.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_listwatch_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:8080\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    token: listwatch\n",
        )
        .unwrap();
        let config = Kubeconfig::load(&path).unwrap();
        assert_eq!(config.server, "http://127.0.0.1:8080");
        assert_eq!(config.token.as_deref(), Some("listwatch"));
    }

    #[test]
    fn reads_token_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "from-file\n").unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:8080\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    tokenFile: token\n",
        )
        .unwrap();
        assert_eq!(Kubeconfig::load(&path).unwrap().token.as_deref(), Some("from-file"));
    }
}
