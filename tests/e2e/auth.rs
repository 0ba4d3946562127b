//! Authentication as kube-apiserver's built-in authenticators do it (token file, x509 client
//! certificates, anonymous), the kubeconfigs `serve` writes and merges, and how `informer`
//! finds one. Authentication does not touch storage: one backend is enough except for the
//! token test, which runs on both.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server, binary, harness, kubectl_binary};

on_both_backends!(token_file_authenticates_bearer_tokens);

const PODS: &str = "/api/v1/namespaces/default/pods";
const TOKENS: &str = "good-token,alice,1001,\"dev,ops\"\nother,bob,1002\n";

fn unauthorized() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
}

/// GET `path` with an optional bearer token: status and JSON body.
async fn get(server: &Server, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut request = server.http.get(server.api(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("request");
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

fn token_file(dir: &Path) -> String {
    let path = dir.join("tokens.csv");
    std::fs::write(&path, TOKENS).unwrap();
    path.display().to_string()
}

async fn token_file_authenticates_bearer_tokens(backend: Backend) {
    let files = tempfile::tempdir().unwrap();
    let tokens = token_file(files.path());
    let server = Server::start("auth-token-file", backend, &["--token-auth-file", &tokens]).await;
    assert_eq!(get(&server, PODS, Some("good-token")).await.0, 200);
    // An unknown token is 401 even though anonymous requests are allowed.
    assert_eq!(get(&server, PODS, Some("bad-token")).await, (401, unauthorized()));
    assert_eq!(get(&server, "/api/v1/namespaces", Some("bad-token")).await, (401, unauthorized()));
    // No credentials at all: anonymous, served.
    assert_eq!(get(&server, PODS, None).await.0, 200);
    // Writes go through with a good token.
    let created = server
        .http
        .post(server.api("/api/v1/namespaces/default/configmaps"))
        .bearer_auth("good-token")
        .json(&json!({"metadata": {"name": "by-alice"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    // The server log is plain text when stderr is a pipe (as here).
    let log = server.log();
    assert!(log.contains("serving the Kubernetes API"), "{log}");
    assert!(!log.contains('\u{1b}'), "ANSI escapes in a piped log:\n{log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_off_refuses_requests_without_credentials() {
    let files = tempfile::tempdir().unwrap();
    let tokens = token_file(files.path());
    // HTTPS: kubectl (client-go) sends credentials only over TLS.
    let server = Server::start(
        "auth-anonymous-off",
        Backend::Memory,
        &["--tls-generate", "--token-auth-file", &tokens, "--anonymous-auth=false"],
    )
    .await;
    assert_eq!(get(&server, PODS, None).await, (401, unauthorized()));
    assert_eq!(get(&server, "/api", None).await, (401, unauthorized()));
    assert_eq!(get(&server, "/healthz/ping", None).await.0, 401);
    // What kube's default RBAC leaves to unauthenticated clients stays open.
    for path in ["/healthz", "/readyz", "/livez", "/version"] {
        let response = server.http.get(server.api(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    assert_eq!(get(&server, "/version", None).await.1["major"], "1");
    assert_eq!(get(&server, PODS, Some("other")).await.0, 200);

    // The kubeconfig serve wrote carries the file's first token: kubectl gets in.
    let k = server.kubectl();
    assert_eq!(k.run(&["create", "configmap", "tokened"]).await.ok().trim(), "configmap/tokened created");
    assert_eq!(k.get_json(&["configmap", "tokened"]).await["metadata"]["name"], "tokened");
    // With a token the server does not know, kubectl says what kube's answer makes it say.
    let bad = files.path().join("bad-kubeconfig");
    let text = std::fs::read_to_string(&server.kubeconfig).unwrap().replace("good-token", "not-a-token");
    std::fs::write(&bad, text).unwrap();
    let out = kubectl_with(&bad, files.path(), &["get", "pods"]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // (kubectl's discovery fails first, and words the 401 its own way.)
    assert!(stderr.contains("error: You must be logged in to the server"), "{stderr}");
}

/// kubectl with `kubeconfig`, its cache under `home`.
async fn kubectl_with(kubeconfig: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let mut command = tokio::process::Command::new(kubectl_binary());
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(home.join("kube-cache"))
        .args(args)
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), command.output()).await.expect("kubectl finishes").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let tokens = token_file(files.path());
    let storage = vec!["--data-dir".to_string(), dir.path().join("data").display().to_string()];
    let server = Server::start_with_storage(
        dir,
        storage,
        None,
        &["--tls-generate", "--client-cert-auth", "--anonymous-auth=false", "--token-auth-file", &tokens],
    )
    .await;
    assert!(server.url.starts_with("https://"), "{}", server.url);

    // The kubeconfig's user is a client certificate the generated CA signed.
    let kubeconfig: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&server.kubeconfig).unwrap()).unwrap();
    let user = &kubeconfig["users"][0]["user"];
    assert!(user["client-certificate-data"].is_string() && user.get("token").is_none(), "{kubeconfig}");
    let k = server.kubectl();
    assert_eq!(k.run(&["get", "pods"]).await.stderr.trim(), "No resources found in default namespace.");
    assert_eq!(k.run(&["create", "configmap", "by-cert"]).await.ok().trim(), "configmap/by-cert created");

    // The same TLS port still serves tokens (the certificate is asked for, not required)...
    assert_eq!(get(&server, PODS, Some("good-token")).await.0, 200);
    assert_eq!(get(&server, PODS, None).await, (401, unauthorized()));

    // ...and a certificate from another CA is 401, not a failed handshake.
    let other = tempfile::tempdir().unwrap();
    let foreign = listwatch_apiserver::tls::generate(other.path(), &[]).unwrap();
    let (cert, key) =
        listwatch_apiserver::tls::client_certificate(&foreign.ca_cert, &foreign.ca_key, "intruder", "system:masters")
            .unwrap();
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .danger_accept_invalid_certs(true)
        .identity(reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes()).unwrap())
        .build()
        .unwrap();
    let response = client.get(server.api(PODS)).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.json::<Value>().await.unwrap(), unauthorized());
    // kubectl with that certificate is told it is not logged in.
    let mut foreign_config = kubeconfig.clone();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    foreign_config["users"][0]["user"]["client-certificate-data"] = b64(&cert).into();
    foreign_config["users"][0]["user"]["client-key-data"] = b64(&key).into();
    let path = other.path().join("kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&foreign_config).unwrap()).unwrap();
    let out = kubectl_with(&path, other.path(), &["get", "pods"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("error: You must be logged in to the server"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_for_plain_http_skips_tls_verify_and_parses() {
    let server = Server::start("auth-http-kubeconfig", Backend::Memory, &[]).await;
    let text = std::fs::read_to_string(&server.kubeconfig).unwrap();
    let config: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(config["apiVersion"], "v1");
    assert_eq!(config["kind"], "Config");
    assert_eq!(config["current-context"], "listwatch");
    assert_eq!(config["clusters"][0]["cluster"]["server"], server.url.as_str(), "{text}");
    assert_eq!(config["clusters"][0]["cluster"]["insecure-skip-tls-verify"], true, "{text}");
    // Our client reads it, and kubectl works with it.
    let client = listwatch_client::Config::from_kubeconfig(&server.kubeconfig).unwrap();
    assert_eq!(client.server, server.url);
    assert!(server.kubectl().run(&["get", "namespaces"]).await.ok().contains("kube-system"));
}

/// Starts `listwatch serve --ephemeral` (no debug API, this process's `RUST_LOG`) with `env` set
/// and this process's `KUBECONFIG` removed first; returns the server and what it has printed.
async fn serve_with_env(env: &[(&str, &Path)], extra: &[&str]) -> (Server, String) {
    let mut builder = harness().debug_api(false).rust_log(None).env_remove("KUBECONFIG").args(extra);
    for (name, value) in env {
        builder = builder.env(name, value);
    }
    let server = Server::start_from(builder).await;
    let printed = server.log();
    (server, printed)
}

const EXISTING: &str = "apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster: {server: 'https://prod.example:6443'}
contexts:
- name: prod
  context: {cluster: prod, user: admin, namespace: shop}
users:
- name: admin
  user: {token: prod-secret}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_merge_keeps_the_existing_context() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".kube").join("config");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, EXISTING).unwrap();
    let (_server, printed) = serve_with_env(&[("HOME", home.path())], &["--kubeconfig-merge"]).await;
    assert!(printed.contains(&format!("merged into {}", config.display())), "{printed}");
    let merged: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(merged["current-context"], "prod", "{merged}");
    let names = |list: &str| -> Vec<String> {
        merged[list].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names("contexts"), ["prod", "listwatch"]);
    assert_eq!(names("clusters"), ["prod", "listwatch"]);
    assert_eq!(names("users"), ["admin", "listwatch"]);
    assert_eq!(merged["contexts"][0]["context"]["namespace"], "shop");
    assert_eq!(merged["users"][0]["user"]["token"], "prod-secret");
    // kubectl reaches listwatch through the merged context.
    let mut kubectl = tokio::process::Command::new(kubectl_binary());
    kubectl
        .args(["--context", "listwatch", "get", "namespace", "kube-system", "-o", "name", "--cache-dir"])
        .arg(home.path().join("kube-cache"))
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), kubectl.output()).await.unwrap().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "namespace/kube-system", "{out:?}");

    // With KUBECONFIG, the first listed file that exists is the one merged into (as kind and
    // kubectl pick it), and one without a current context gets ours.
    let listed = home.path().join("listed");
    std::fs::write(&listed, "clusters: []\n").unwrap();
    let list = std::env::join_paths([home.path().join("missing"), listed.clone(), config.clone()]).unwrap();
    let (_second, _) =
        serve_with_env(&[("HOME", home.path()), ("KUBECONFIG", Path::new(&list))], &["--kubeconfig-merge"]).await;
    let second: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&listed).unwrap()).unwrap();
    assert_eq!(second["current-context"], "listwatch", "{second}");
    assert!(!home.path().join("missing").exists());
}

/// Writes a kubeconfig for `server` (with a bearer token) at `path`.
fn kubeconfig_for(path: &Path, server: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n"
    );
    std::fs::write(path, text).unwrap();
}

/// Runs `listwatch informer configmaps` briefly: whether it synced, and what it said on stderr.
async fn informer(home: &Path, kubeconfig_env: Option<&std::ffi::OsStr>, flag: Option<&Path>) -> (bool, String) {
    let mut command = tokio::process::Command::new(binary());
    command.args(["informer", "configmaps", "-n", "default", "--duration", "10ms"]);
    if let Some(flag) = flag {
        command.arg("--kubeconfig").arg(flag);
    }
    command.env("HOME", home).env_remove("KUBECONFIG").stdin(Stdio::null()).kill_on_drop(true);
    if let Some(value) = kubeconfig_env {
        command.env("KUBECONFIG", value);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), command.output()).await.unwrap().unwrap();
    let synced = out.status.success() && String::from_utf8_lossy(&out.stdout).contains("synced:");
    (synced, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_finds_the_kubeconfig_as_kubectl_does() {
    let server = Server::start("auth-informer-discovery", Backend::Memory, &[]).await;
    let home = tempfile::tempdir().unwrap();
    let kube = home.path().join(".kube");
    let nowhere = "http://127.0.0.1:9"; // nothing listens there
    let good = home.path().join("good");
    let bad = home.path().join("bad");
    kubeconfig_for(&good, &server.url);
    kubeconfig_for(&bad, nowhere);
    let using = |path: &Path| format!("using kubeconfig {}", path.display());

    // Nothing but what `serve` writes: that one.
    kubeconfig_for(&kube.join("listwatch-config"), &server.url);
    let (synced, said) = informer(home.path(), None, None).await;
    assert!(synced && said.contains(&using(&kube.join("listwatch-config"))), "{said}");
    // ~/.kube/config comes first.
    kubeconfig_for(&kube.join("config"), nowhere);
    let (synced, said) = informer(home.path(), None, None).await;
    assert!(!synced && said.contains(&using(&kube.join("config"))), "{said}");
    // KUBECONFIG before that (missing files skipped, the rest merged: the first file's
    // current context wins).
    let list = std::env::join_paths([home.path().join("missing"), good.clone(), bad.clone()]).unwrap();
    let (synced, said) = informer(home.path(), Some(&list), None).await;
    assert!(synced, "{said}");
    assert!(said.contains(&format!("using kubeconfig {}:{}", good.display(), bad.display())), "{said}");
    // --kubeconfig before everything.
    let list = std::env::join_paths([bad.clone()]).unwrap();
    let (synced, said) = informer(home.path(), Some(&list), Some(&good)).await;
    assert!(synced && said.contains(&using(&good)), "{said}");
}
