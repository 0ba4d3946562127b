//! Exec credential plugins in kubeconfigs, as EKS, GKE and AKS write them, against a listwatch
//! that refuses anonymous requests: the plugin (a small shell script written by each test) runs
//! with the kubeconfig's arguments and environment and `KUBERNETES_EXEC_INFO`, its token
//! authenticates, it is kept until it expires or is refused, and a failing plugin is an error
//! that names the command and quotes its stderr. A plugin may give a client certificate instead.

mod support;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use listwatch_client::{Api, ApiResource, Client, Config, DynamicObject, ListParams};
use support::{Backend, Server};

const TOKENS: &str = "good-token,alice,1001\n";

/// A server that authenticates `good-token` and nothing else.
async fn token_server(name: &str, files: &Path) -> Server {
    let tokens = files.join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let tokens = tokens.display().to_string();
    Server::start(name, Backend::Memory, &["--token-auth-file", &tokens, "--anonymous-auth=false"]).await
}

/// Writes an executable shell script `body` as `dir/plugin` (the plugin's runs are counted in
/// `dir/runs`: one line a run).
fn plugin(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("plugin");
    let script = format!("#!/bin/sh\necho run >> \"{}/runs\"\n{body}\n", dir.display());
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// How many times the plugin in `dir` ran.
fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs")).map(|text| text.lines().count()).unwrap_or(0)
}

/// An ExecCredential printing `status` (JSON), for a `plugin` body.
fn prints(status: &str) -> String {
    format!(
        "cat <<'EOF'\n{{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{{}},\"status\":{status}}}\nEOF"
    )
}

/// A kubeconfig for `server` (its URL, and its CA when it has one) whose user runs `exec` (the
/// YAML of the `exec` entry, indented for it).
fn kubeconfig(dir: &Path, server: &Server, exec: &str) -> PathBuf {
    let cluster = server.config();
    let ca = cluster
        .tls
        .ca_pem
        .as_ref()
        .map(|pem| {
            format!("\n    certificate-authority-data: {}", base64::engine::general_purpose::STANDARD.encode(pem))
        })
        .unwrap_or_default();
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}{ca}\n    extensions:\n    - name: client.authentication.k8s.io/exec\n      extension:\n        audience: listwatch\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    exec:\n{exec}\n",
        cluster.server
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn client_of(kubeconfig: &Path) -> Client {
    Client::new(Config::from_kubeconfig(kubeconfig).expect("the kubeconfig loads")).expect("a client")
}

async fn list_namespaces(client: &Client) -> Result<usize, listwatch_client::Error> {
    let api: Api<DynamicObject> = Api::new(client.clone(), ApiResource::namespaces(), None);
    api.list(&ListParams::default()).await.map(|list| list.items.len())
}

#[tokio::test]
async fn the_plugins_token_authenticates_and_is_kept() {
    let files = tempfile::tempdir().unwrap();
    let server = token_server("exec-token", files.path()).await;
    let dir = files.path();
    plugin(
        dir,
        &format!(
            "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"{0}/exec-info\"\nprintf '%s|' \"$@\" > \"{0}/args\"\nprintf '%s' \"$PLUGIN_REGION\" > \"{0}/env\"\n{1}",
            dir.display(),
            prints(r#"{"token":"good-token","expirationTimestamp":"2999-01-01T00:00:00Z"}"#)
        ),
    );
    // A relative command with a separator is resolved against the kubeconfig's directory.
    let exec = "      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin\n      args: [eks, get-token, --cluster-name, demo]\n      env:\n      - name: PLUGIN_REGION\n        value: eu-west-1\n      interactiveMode: Never\n      provideClusterInfo: true";
    let kubeconfig = kubeconfig(dir, &server, exec);

    // Without credentials this server answers 401: a list that works was authenticated.
    let anonymous = Client::new(Config::new(&server.url)).unwrap();
    assert_eq!(list_namespaces(&anonymous).await.unwrap_err().code(), Some(401));
    let client = client_of(&kubeconfig);
    for _ in 0..3 {
        assert!(list_namespaces(&client).await.expect("authenticated by the plugin's token") > 0);
    }
    assert_eq!(runs(dir), 1, "the token is kept until it expires");

    assert_eq!(std::fs::read_to_string(dir.join("args")).unwrap(), "eks|get-token|--cluster-name|demo|");
    assert_eq!(std::fs::read_to_string(dir.join("env")).unwrap(), "eu-west-1");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("exec-info")).unwrap()).unwrap();
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["apiVersion"], "client.authentication.k8s.io/v1");
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], server.url.as_str());
    assert_eq!(info["spec"]["cluster"]["config"], serde_json::json!({"audience": "listwatch"}));
}

#[tokio::test]
async fn an_expired_or_refused_token_runs_the_plugin_again() {
    let files = tempfile::tempdir().unwrap();
    let server = token_server("exec-refresh", files.path()).await;

    // Expired the moment it is given: every request runs the plugin.
    let expired = files.path().join("expired");
    std::fs::create_dir(&expired).unwrap();
    plugin(&expired, &prints(r#"{"token":"good-token","expirationTimestamp":"2000-01-01T00:00:00Z"}"#));
    let exec = "      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin\n      interactiveMode: IfAvailable";
    let client = client_of(&kubeconfig(&expired, &server, exec));
    list_namespaces(&client).await.unwrap();
    list_namespaces(&client).await.unwrap();
    assert_eq!(runs(&expired), 2);

    // The first run gives a token the server refuses: the 401 runs the plugin again and the
    // request goes once more, with the new token.
    let rotated = files.path().join("rotated");
    std::fs::create_dir(&rotated).unwrap();
    let body = format!(
        "if [ \"$(wc -l < \"{}/runs\")\" -eq 1 ]; then\n{}\nelse\n{}\nfi",
        rotated.display(),
        prints(r#"{"token":"revoked-token"}"#),
        prints(r#"{"token":"good-token"}"#)
    );
    plugin(&rotated, &body);
    let client = client_of(&kubeconfig(&rotated, &server, exec));
    assert!(list_namespaces(&client).await.expect("the retry with the new token") > 0);
    assert_eq!(runs(&rotated), 2);

    // A plugin that keeps giving a refused token: the 401 is the answer, after one more run.
    let revoked = files.path().join("revoked");
    std::fs::create_dir(&revoked).unwrap();
    plugin(&revoked, &prints(r#"{"token":"revoked-token"}"#));
    let client = client_of(&kubeconfig(&revoked, &server, exec));
    assert_eq!(list_namespaces(&client).await.unwrap_err().code(), Some(401));
    assert_eq!(runs(&revoked), 2);
}

#[tokio::test]
async fn a_failing_plugin_is_an_error_naming_the_command_and_its_stderr() {
    let files = tempfile::tempdir().unwrap();
    let server = token_server("exec-failing", files.path()).await;
    let dir = files.path();
    plugin(dir, "echo 'error: the SSO session has expired; run aws sso login' >&2\nexit 3");
    let exec =
        "      apiVersion: client.authentication.k8s.io/v1beta1\n      command: ./plugin\n      args: [eks, get-token]";
    let error = list_namespaces(&client_of(&kubeconfig(dir, &server, exec))).await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("plugin eks get-token"), "{message}");
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(message.contains("stderr: error: the SSO session has expired; run aws sso login"), "{message}");

    let missing = "      apiVersion: client.authentication.k8s.io/v1beta1\n      command: gke-gcloud-auth-plugin-not-installed\n      installHint: Install gke-gcloud-auth-plugin with gcloud components install.";
    let message = list_namespaces(&client_of(&kubeconfig(dir, &server, missing))).await.unwrap_err().to_string();
    assert!(
        message.contains("\"gke-gcloud-auth-plugin-not-installed\" not found; Install gke-gcloud-auth-plugin"),
        "{message}"
    );

    plugin(
        dir,
        "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":{}}'",
    );
    let message = list_namespaces(&client_of(&kubeconfig(dir, &server, exec))).await.unwrap_err().to_string();
    assert!(message.contains("configured to use API version client.authentication.k8s.io/v1beta1"), "{message}");

    // v1 needs interactiveMode, as kubectl says.
    let no_mode = "      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin";
    let error = Config::from_kubeconfig(&kubeconfig(dir, &server, no_mode)).unwrap_err();
    assert!(error.to_string().contains("interactiveMode must be set"), "{error}");
}

#[tokio::test]
async fn a_plugins_client_certificate_authenticates_over_tls() {
    let server = Server::start(
        "exec-certificate",
        Backend::Memory,
        &["--tls-generate", "--client-cert-auth", "--anonymous-auth=false"],
    )
    .await;
    // The server's own kubeconfig holds a certificate its CA signed: the plugin hands it out.
    let own = server.config();
    let (certificate, key) = (own.tls.client_cert_pem.expect("a client certificate"), own.tls.client_key_pem.unwrap());
    let status = serde_json::json!({
        "clientCertificateData": String::from_utf8(certificate).unwrap(),
        "clientKeyData": String::from_utf8(key).unwrap(),
    });
    let files = tempfile::tempdir().unwrap();
    plugin(files.path(), &prints(&status.to_string()));
    let exec =
        "      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin\n      interactiveMode: Never";
    let kubeconfig = kubeconfig(files.path(), &server, exec);

    let without = Config { auth: listwatch_client::Auth::None, ..Config::from_kubeconfig(&kubeconfig).unwrap() };
    assert_eq!(list_namespaces(&Client::new(without).unwrap()).await.unwrap_err().code(), Some(401));
    assert!(list_namespaces(&client_of(&kubeconfig)).await.expect("authenticated by the plugin's certificate") > 0);
    assert_eq!(runs(files.path()), 1);
}
