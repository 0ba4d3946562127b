//! Running an exec plugin: the command with the kubeconfig's arguments and environment and
//! `KUBERNETES_EXEC_INFO`, stdin closed (never interactive), stdout read as the credential and
//! stderr kept for the error message.

use std::process::Stdio;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::credential::{self, ExecCredentials};
use super::{ExecCluster, ExecConfig, InteractiveMode, SUPPORTED_API_VERSIONS};
use crate::error::Error;

/// How much of a failing plugin's stderr an error quotes.
const STDERR_QUOTED: usize = 4096;

/// Runs the plugin once and reads its credentials.
pub(super) async fn run(config: &ExecConfig) -> Result<ExecCredentials, Error> {
    let failed = |why: String| Error::ExecPlugin { command: config.command_line(), why };
    if !SUPPORTED_API_VERSIONS.contains(&config.api_version.as_str()) {
        return Err(failed(format!(
            "apiVersion {:?} is not one this client speaks ({})",
            config.api_version,
            SUPPORTED_API_VERSIONS.join(", ")
        )));
    }
    if config.interactive_mode == InteractiveMode::Always {
        return Err(failed("interactiveMode is Always, but this client has no terminal to give the plugin".into()));
    }
    let output = tokio::process::Command::new(&config.command)
        .args(&config.args)
        .envs(config.env.iter().map(|(name, value)| (name, value)))
        .env("KUBERNETES_EXEC_INFO", exec_info(config).to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => failed(match &config.install_hint {
                Some(hint) => format!("executable {:?} not found; {}", config.command, hint.trim()),
                None => format!("executable {:?} not found", config.command),
            }),
            _ => failed(format!("could not start it: {e}")),
        })?;
    let stderr = quote(&output.stderr);
    if !output.status.success() {
        return Err(failed(format!("it exited with {}{stderr}", output.status)));
    }
    credential::parse(&output.stdout, &config.api_version).map_err(|why| failed(format!("{why}{stderr}")))
}

/// `; stderr: …` with the end of the plugin's stderr, or nothing when it wrote none.
fn quote(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let start = text.len().saturating_sub(STDERR_QUOTED);
    let start = (start..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("; stderr: {}", &text[start..])
}

/// The `ExecCredential` given to the plugin in `KUBERNETES_EXEC_INFO`.
fn exec_info(config: &ExecConfig) -> Value {
    let mut spec = Map::new();
    spec.insert("interactive".into(), Value::Bool(false));
    if let Some(cluster) = &config.cluster {
        spec.insert("cluster".into(), cluster_info(cluster));
    }
    json!({"kind": "ExecCredential", "apiVersion": config.api_version, "spec": spec})
}

fn cluster_info(cluster: &ExecCluster) -> Value {
    let mut info = Map::new();
    info.insert("server".into(), Value::from(cluster.server.clone()));
    if let Some(name) = &cluster.tls_server_name {
        info.insert("tls-server-name".into(), Value::from(name.clone()));
    }
    if cluster.insecure_skip_tls_verify {
        info.insert("insecure-skip-tls-verify".into(), Value::Bool(true));
    }
    if let Some(ca) = &cluster.certificate_authority_data {
        info.insert("certificate-authority-data".into(), base64::engine::general_purpose::STANDARD.encode(ca).into());
    }
    if let Some(proxy) = &cluster.proxy_url {
        info.insert("proxy-url".into(), Value::from(proxy.clone()));
    }
    if cluster.disable_compression {
        info.insert("disable-compression".into(), Value::Bool(true));
    }
    if let Some(config) = &cluster.config {
        info.insert("config".into(), config.clone());
    }
    Value::Object(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ExecConfig {
        ExecConfig {
            api_version: "client.authentication.k8s.io/v1beta1".into(),
            command: "aws".into(),
            args: vec!["eks".into(), "get-token".into()],
            env: Vec::new(),
            interactive_mode: InteractiveMode::IfAvailable,
            install_hint: None,
            cluster: None,
        }
    }

    #[test]
    fn exec_info_says_not_interactive_and_describes_the_cluster_only_when_asked() {
        assert_eq!(
            exec_info(&config()),
            json!({"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1beta1", "spec": {"interactive": false}})
        );
        let cluster = ExecCluster {
            server: "https://10.0.0.1:443".into(),
            tls_server_name: Some("kubernetes".into()),
            certificate_authority_data: Some(b"hello".to_vec()),
            config: Some(json!({"audience": "sts"})),
            ..ExecCluster::default()
        };
        let with_cluster = ExecConfig { cluster: Some(cluster), ..config() };
        assert_eq!(
            exec_info(&with_cluster)["spec"]["cluster"],
            json!({"server": "https://10.0.0.1:443", "tls-server-name": "kubernetes", "certificate-authority-data": "aGVsbG8=", "config": {"audience": "sts"}})
        );
    }

    #[test]
    fn stderr_is_quoted_from_its_end() {
        assert_eq!(quote(b"  \n"), "");
        assert_eq!(quote(b"token expired\n"), "; stderr: token expired");
        let long = format!("{}é{}", "x".repeat(5000), "the end");
        let quoted = quote(long.as_bytes());
        assert!(quoted.ends_with("the end") && quoted.len() <= STDERR_QUOTED + 20, "{}", quoted.len());
    }
}
