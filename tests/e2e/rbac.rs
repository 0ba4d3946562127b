//! `--authorization-mode RBAC` as kubectl sees it: `auth can-i` over the default roles,
//! `auth whoami`, impersonation with `--as`, kube's 403 messages, and a table of requests that
//! try to get round authorization (other paths to the same objects, watches, subresources,
//! impersonation headers). Users come from a token file; its first token, `admin`'s (in
//! `system:masters`), is the kubeconfig's.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Kubectl, Server};

on_both_backends!(kubectl_sees_the_default_roles_and_bindings);

const TOKENS: &str = "admin-token,admin,1,system:masters\nalice-token,alice,2\nbob-token,bob,3\ncarol-token,carol,4\n";

async fn start(name: &str, backend: Backend) -> (Server, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let tokens = files.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let tokens = tokens.display().to_string();
    let server =
        Server::start(name, backend, &["--authorization-mode", "RBAC", "--tls-generate", "--token-auth-file", &tokens])
            .await;
    (server, files)
}

/// `kubectl auth can-i` as it answers: yes or no.
async fn can_i(k: &Kubectl, args: &[&str]) -> bool {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let out = k.run(&all).await;
    match out.stdout.trim() {
        "yes" => true,
        "no" => false,
        _ => panic!("kubectl auth can-i {args:?}: {out:?}"),
    }
}

/// Waits until `kubectl auth can-i args` says yes: a binding applies once the RBAC caches
/// have it (as kube's informers do), not necessarily at once.
async fn await_yes(k: &Kubectl, args: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !can_i(k, args).await {
        assert!(Instant::now() < deadline, "never allowed: {args:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn kubectl_sees_the_default_roles_and_bindings(backend: Backend) {
    let (server, _files) = start("rbac-matrix", backend).await;
    let k = server.kubectl();
    // The admin (system:masters) may do anything, and is who kubectl says it is.
    assert!(can_i(&k, &["*", "*", "--all-namespaces"]).await);
    let whoami = k.run(&["auth", "whoami", "-o", "json"]).await.ok();
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "admin");
    assert_eq!(whoami["status"]["userInfo"]["groups"], json!(["system:masters", "system:authenticated"]));
    // kube's default roles are there, aggregated.
    let roles = k.run(&["get", "clusterroles", "-o", "name"]).await.ok();
    for role in ["admin", "edit", "view", "cluster-admin", "system:discovery", "system:basic-user"] {
        assert!(roles.lines().any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{role}")), "{role}: {roles}");
    }

    k.run(&["create", "namespace", "team"]).await.ok();
    k.run(&["create", "rolebinding", "alice-edits", "--clusterrole=edit", "--user=alice", "-n", "team"]).await.ok();
    k.run(&["create", "rolebinding", "carol-admins", "--clusterrole=admin", "--user=carol", "-n", "team"]).await.ok();
    k.run(&["create", "clusterrolebinding", "bob-views", "--clusterrole=view", "--user=bob"]).await.ok();
    await_yes(&k, &["create", "deployments", "-n", "team", "--as", "alice"]).await;
    await_yes(&k, &["create", "roles", "-n", "team", "--as", "carol"]).await;
    await_yes(&k, &["list", "pods", "-n", "default", "--as", "bob"]).await;

    // (who, verb, resource, namespace, allowed), each as a real cluster answers it.
    let matrix: &[(&str, &str, &str, &str, bool)] = &[
        ("alice", "create", "deployments.apps", "team", true),
        ("alice", "delete", "configmaps", "team", true),
        ("alice", "get", "secrets", "team", true),
        ("alice", "get", "pods/log", "team", true),
        ("alice", "update", "deployments/scale", "team", true),
        ("alice", "create", "roles", "team", false),
        ("alice", "create", "rolebindings", "team", false),
        ("alice", "list", "pods", "default", false),
        ("alice", "list", "nodes", "", false),
        ("alice", "impersonate", "serviceaccounts", "team", true),
        ("bob", "list", "pods", "team", true),
        ("bob", "watch", "deployments.apps", "kube-system", true),
        ("bob", "get", "pods/log", "default", true),
        ("bob", "get", "secrets", "default", false),
        ("bob", "create", "configmaps", "default", false),
        ("bob", "list", "nodes", "", false),
        ("bob", "list", "clusterroles", "", false),
        ("carol", "create", "roles", "team", true),
        ("carol", "delete", "rolebindings", "team", true),
        ("carol", "list", "secrets", "team", true),
        ("carol", "list", "pods", "default", false),
        ("dave", "list", "pods", "default", false),
        ("dave", "create", "selfsubjectaccessreviews.authorization.k8s.io", "", true),
        // Impersonating a user by name does not bring the groups its token has: `--as admin`
        // is no member of system:masters.
        ("admin", "delete", "nodes", "", false),
    ];
    let mut wrong = Vec::new();
    for (who, verb, resource, namespace, allowed) in matrix {
        let mut args = vec![*verb, *resource, "--as", who];
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        if can_i(&k, &args).await != *allowed {
            wrong.push(format!("{who} {verb} {resource} in {namespace:?}: expected {allowed}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");

    // What kubectl prints when refused, on a list and on a watch.
    let refused = k.run(&["get", "pods", "-n", "default", "--as", "alice"]).await;
    assert!(!refused.success);
    assert!(
        refused.stderr.contains(r#"Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#),
        "{refused:?}"
    );
    // (kubectl lists before it watches; a bare refused watch is in the table below.)
    let refused = k.run(&["get", "secrets", "-n", "default", "--watch", "--as", "bob"]).await;
    assert!(!refused.success, "{refused:?}");
    assert!(refused.stderr.contains(r#"User "bob" cannot list resource "secrets""#), "{refused:?}");
    // `--list` shows what the role grants.
    let list = k.run(&["auth", "can-i", "--list", "-n", "team", "--as", "alice"]).await.ok();
    assert!(list.lines().any(|l| l.starts_with("deployments.apps ")), "{list}");
    assert!(list.lines().any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io ")), "{list}");
    // No one grants what they do not hold: carol (admin in team) may make a role of what she
    // has and bind view, but not a role over nodes nor a binding to cluster-admin.
    k.run(&["create", "role", "pod-reader", "--verb=get", "--resource=pods", "-n", "team", "--as", "carol"]).await.ok();
    k.run(&["create", "rolebinding", "eve-views", "--clusterrole=view", "--user=eve", "-n", "team", "--as", "carol"])
        .await
        .ok();
    let refused = k
        .run(&["create", "role", "node-lister", "--verb=list", "--resource=nodes", "-n", "team", "--as", "carol"])
        .await;
    assert!(!refused.success);
    assert!(
        refused.stderr.contains(r#"roles.rbac.authorization.k8s.io "node-lister" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#)
            && refused.stderr.contains(r#"{APIGroups:[""], Resources:["nodes"], Verbs:["list"]}"#),
        "{refused:?}"
    );
    let refused = k
        .run(&[
            "create",
            "rolebinding",
            "eve-rules",
            "--clusterrole=cluster-admin",
            "--user=eve",
            "-n",
            "team",
            "--as",
            "carol",
        ])
        .await;
    assert!(
        !refused.success
            && refused
                .stderr
                .contains(r#"rolebindings.rbac.authorization.k8s.io "eve-rules" is forbidden: user "carol""#),
        "{refused:?}"
    );
    // Impersonating a group too.
    let whoami = k.run(&["auth", "whoami", "--as", "eve", "--as-group", "devs", "-o", "json"]).await.ok();
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["status"]["userInfo"], json!({"username": "eve", "groups": ["devs", "system:authenticated"]}));
}

/// A raw request as the token's user: status and JSON body.
async fn request(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut request = server.http.request(method, server.api(path)).bearer_auth(token);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if path.contains("reviews") {
        request = request.json(&json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// One attempt of the table: method, path, headers, and the 403 message it must get (empty:
/// any refusal will do).
type Attempt<'a> = (reqwest::Method, &'a str, Vec<(&'a str, &'a str)>, String);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_gets_round_authorization() {
    let (server, _files) = start("rbac-bypass", Backend::Memory).await;
    let k = server.kubectl();
    k.run(&["create", "configmap", "secret-ish", "-n", "default"]).await.ok();
    k.run(&["create", "namespace", "team"]).await.ok();
    k.run(&["create", "rolebinding", "alice-reads-team", "--clusterrole=view", "--user=alice", "-n", "team"])
        .await
        .ok();
    await_yes(&k, &["list", "configmaps", "-n", "team", "--as", "alice"]).await;

    use reqwest::Method;
    let forbidden = |verb: &str, resource: &str, name: &str, namespace: &str| {
        let name_part = if name.is_empty() { String::new() } else { format!("{name:?} ") };
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {namespace:?}")
        };
        let group_resource = resource.split('/').next().unwrap();
        format!(
            r#"{group_resource} {name_part}is forbidden: User "alice" cannot {verb} resource {resource:?} in API group "" {scope}"#
        )
    };
    // (method, path, headers, the 403 message; empty when any refusal but 200/201 will do)
    let cases: Vec<Attempt> = vec![
        (Method::GET, "/api/v1/namespaces/default/configmaps", vec![], forbidden("list", "configmaps", "", "default")),
        (Method::GET, "/api/v1/namespaces/default/configmaps/secret-ish", vec![], forbidden("get", "configmaps", "secret-ish", "default")),
        (Method::GET, "/api/v1/namespaces/default/configmaps?watch=1", vec![], forbidden("watch", "configmaps", "", "default")),
        (Method::GET, "/api/v1/watch/namespaces/default/configmaps", vec![], forbidden("watch", "configmaps", "", "default")),
        (Method::GET, "/api/v1/watch/namespaces/default/configmaps/secret-ish", vec![], forbidden("watch", "configmaps", "secret-ish", "default")),
        (Method::GET, "/api/v1/configmaps", vec![], forbidden("list", "configmaps", "", "")),
        (Method::DELETE, "/api/v1/namespaces/team/configmaps", vec![], forbidden("deletecollection", "configmaps", "", "team")),
        (Method::PATCH, "/api/v1/namespaces/team/pods/p/status", vec![], forbidden("patch", "pods/status", "p", "team")),
        (Method::GET, "/api/v1/namespaces/team/pods/p/log", vec![], String::new()),
        (Method::GET, "/api/v1/namespaces/team/secrets", vec![], forbidden("list", "secrets", "", "team")),
        (Method::GET, "/api/v1/namespaces/team/../default/configmaps", vec![], String::new()),
        (Method::GET, "/api/v1/namespaces/default%2fconfigmaps", vec![], String::new()),
        (Method::GET, "//api/v1/namespaces/default/configmaps", vec![], String::new()),
        (Method::GET, "/api/v1/namespaces/default/configmaps/", vec![], String::new()),
        (Method::GET, "/api/v1/nodes", vec![], forbidden("list", "nodes", "", "")),
        (Method::GET, "/metrics", vec![], r#"forbidden: User "alice" cannot get path "/metrics""#.to_string()),
        (Method::GET, "/debug/listwatch/stores", vec![], r#"forbidden: User "alice" cannot get path "/debug/listwatch/stores""#.to_string()),
        (Method::GET, "/api/v1/namespaces/default/configmaps", vec![("Impersonate-User", "admin")], r#"users "admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#.to_string()),
        (Method::GET, "/api/v1/namespaces/default/configmaps", vec![("Impersonate-User", "alice"), ("Impersonate-Group", "system:masters")], r#"users "alice" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#.to_string()),
        (Method::GET, "/api/v1/namespaces/default/configmaps", vec![("Impersonate-Group", "system:masters")], String::new()),
        (Method::GET, "/api/v1/namespaces/default/configmaps", vec![("Impersonate-User", "system:serviceaccount:kube-system:default")], r#"serviceaccounts "default" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system""#.to_string()),
        (Method::POST, "/apis/authorization.k8s.io/v1/subjectaccessreviews", vec![], r#"subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope"#.to_string()),
        (Method::POST, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", vec![], r#"clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "alice" cannot create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope"#.to_string()),
    ];
    let mut wrong = Vec::new();
    for (method, path, headers, message) in &cases {
        let (status, body) = request(&server, method.clone(), path, "alice-token", headers).await;
        let refused = !(200..300).contains(&status);
        let right = if message.is_empty() {
            refused
        } else {
            status == 403 && body["reason"] == "Forbidden" && body["message"] == message.as_str()
        };
        if !right {
            wrong.push(format!("{method} {path} {headers:?}: {status} {body}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Malformed RBAC objects get kube's 422.
    let bad = json!({"metadata": {"name": "bad"}, "roleRef": {"kind": "Role", "name": "x"},
        "subjects": [{"kind": "Robot", "name": "r2"}]});
    let response = server
        .http
        .post(server.api("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"))
        .bearer_auth("admin-token")
        .json(&bad)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["message"],
        r#"ClusterRoleBinding.rbac.authorization.k8s.io "bad" is invalid: [roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole", subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"]"#
    );
    // A selector cannot reach into another namespace: a list of none.
    let (status, body) = request(
        &server,
        Method::GET,
        "/api/v1/namespaces/team/configmaps?fieldSelector=metadata.namespace%3Ddefault",
        "alice-token",
        &[],
    )
    .await;
    assert_eq!((status, body["items"].as_array().map(Vec::len)), (200, Some(0)), "{body}");
    // Groups without a user: kube's 400.
    let (status, body) = request(&server, Method::GET, "/api", "alice-token", &[("Impersonate-Group", "devs")]).await;
    assert_eq!((status, body["reason"].as_str()), (400, Some("BadRequest")), "{body}");
    // What alice may read she reads; the admin may impersonate her and gets her answers.
    assert_eq!(request(&server, Method::GET, "/api/v1/namespaces/team/configmaps", "alice-token", &[]).await.0, 200);
    let (status, body) = request(
        &server,
        Method::GET,
        "/api/v1/namespaces/default/configmaps",
        "admin-token",
        &[("Impersonate-User", "alice")],
    )
    .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (403, Some(forbidden("list", "configmaps", "", "default").as_str()))
    );
    // An access review answers for the asker.
    let (status, body) =
        request(&server, Method::POST, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "alice-token", &[])
            .await;
    assert_eq!((status, &body["status"]), (201, &json!({"allowed": false})), "{body}");
}

/// A controller running as its own ServiceAccount gets exactly what its role grants: the
/// account's `default` sibling appears by itself, `kubectl create token` signs a token, and
/// the token stops working once the account is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_gets_exactly_its_roles_rights() {
    let files = tempfile::tempdir().unwrap();
    let tokens = files.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let tokens = tokens.display().to_string();
    let server = Server::start(
        "rbac-service-account",
        Backend::Memory,
        &[
            "--authorization-mode",
            "RBAC",
            "--tls-generate",
            "--token-auth-file",
            &tokens,
            "--controllers",
            "serviceaccount",
        ],
    )
    .await;
    let k = server.kubectl();
    k.run(&["create", "namespace", "team"]).await.ok();
    // kube-controller-manager's service account controller: a default account per namespace.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !k.run(&["get", "serviceaccount", "default", "-n", "team"]).await.success {
        assert!(Instant::now() < deadline, "no default service account in team");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    k.run(&["create", "serviceaccount", "ctl", "-n", "team"]).await.ok();
    k.run(&["create", "clusterrole", "cm-reader", "--verb=get,list,watch", "--resource=configmaps"]).await.ok();
    k.run(&[
        "create",
        "rolebinding",
        "ctl-reads",
        "--clusterrole=cm-reader",
        "--serviceaccount=team:ctl",
        "-n",
        "team",
    ])
    .await
    .ok();
    k.run(&["create", "configmap", "settings", "-n", "team"]).await.ok();
    await_yes(&k, &["list", "configmaps", "-n", "team", "--as", "system:serviceaccount:team:ctl"]).await;
    let token = k.run(&["create", "token", "ctl", "-n", "team", "--duration", "20m"]).await.ok().trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    use reqwest::Method;
    let who = "system:serviceaccount:team:ctl";
    assert_eq!(request(&server, Method::GET, "/api/v1/namespaces/team/configmaps", &token, &[]).await.0, 200);
    assert_eq!(request(&server, Method::GET, "/api/v1/namespaces/team/configmaps/settings", &token, &[]).await.0, 200);
    let refusals = [
        (
            Method::GET,
            "/api/v1/namespaces/team/secrets",
            format!(
                r#"secrets is forbidden: User "{who}" cannot list resource "secrets" in API group "" in the namespace "team""#
            ),
        ),
        (
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            format!(
                r#"configmaps is forbidden: User "{who}" cannot list resource "configmaps" in API group "" in the namespace "default""#
            ),
        ),
        (
            Method::DELETE,
            "/api/v1/namespaces/team/configmaps/settings",
            format!(
                r#"configmaps "settings" is forbidden: User "{who}" cannot delete resource "configmaps" in API group "" in the namespace "team""#
            ),
        ),
    ];
    for (method, path, message) in refusals {
        let (status, body) = request(&server, method, path, &token, &[]).await;
        assert_eq!((status, body["message"].as_str()), (403, Some(message.as_str())), "{path}");
    }
    // Who the token is, by the server's own answer.
    let response = server
        .http
        .post(server.api("/apis/authentication.k8s.io/v1/selfsubjectreviews"))
        .bearer_auth(&token)
        .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
        .send()
        .await
        .unwrap();
    let review: Value = response.json().await.unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], who);
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"])
    );
    // kubectl with the token reads what the role allows and no more.
    let listed = k.run(&["get", "configmaps", "-n", "team", "--token", &token, "-o", "name"]).await.ok();
    assert!(listed.contains("configmap/settings"), "{listed}");
    let refused = k.run(&["get", "pods", "-n", "team", "--token", &token]).await;
    assert!(!refused.success && refused.stderr.contains("(Forbidden)"), "{refused:?}");
    // A tampered token is no one's; a deleted account's token stops working.
    let mut tampered = token.clone();
    tampered.pop();
    tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
    assert_eq!(request(&server, Method::GET, "/api/v1/namespaces/team/configmaps", &tampered, &[]).await.0, 401);
    k.run(&["delete", "serviceaccount", "ctl", "-n", "team"]).await.ok();
    let deadline = Instant::now() + Duration::from_secs(20);
    while request(&server, Method::GET, "/api/v1/namespaces/team/configmaps", &token, &[]).await.0 != 401 {
        assert!(Instant::now() < deadline, "the token outlived its account");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // TokenRequest's own rules: an account that does not exist, a too short duration.
    let missing = k.run(&["create", "token", "nobody", "-n", "team"]).await;
    assert!(missing.stderr.contains(r#"serviceaccounts "nobody" not found"#), "{missing:?}");
    let short = k.run(&["create", "token", "default", "-n", "team", "--duration", "1m"]).await;
    assert!(short.stderr.contains("may not specify a duration less than 10 minutes"), "{short:?}");
}

/// The default policy is reconciled at every start, as kube reconciles it: a rule taken out
/// of a default role comes back, unless its owner turned `autoupdate` off. (Not aggregated
/// roles: the aggregation controller rewrites their rules whatever the annotation says.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_roles_are_reconciled_at_start() {
    let (mut server, _files) = start("rbac-reconcile", Backend::Etcd).await;
    let k = server.kubectl();
    let rules = |role: Value| role["rules"].as_array().map_or(0, Vec::len);
    let (kept, owned) = ("system:aggregate-to-view", "system:auth-delegator");
    let kept_rules = rules(k.get_json(&["clusterrole", kept]).await);
    let owned_rules = rules(k.get_json(&["clusterrole", owned]).await);
    assert!(kept_rules > 5 && owned_rules == 2, "{kept_rules} {owned_rules}");
    let remove_first = r#"[{"op": "remove", "path": "/rules/0"}]"#;
    k.run(&["patch", "clusterrole", kept, "--type=json", "-p", remove_first]).await.ok();
    k.run(&["patch", "clusterrole", owned, "--type=json", "-p", remove_first]).await.ok();
    k.run(&["annotate", "clusterrole", owned, "--overwrite", "rbac.authorization.kubernetes.io/autoupdate=false"])
        .await
        .ok();
    assert_eq!(rules(k.get_json(&["clusterrole", kept]).await), kept_rules - 1);
    server.restart().await;
    assert_eq!(rules(k.get_json(&["clusterrole", kept]).await), kept_rules, "the lost rule is back");
    assert_eq!(rules(k.get_json(&["clusterrole", owned]).await), owned_rules - 1, "left as its owner made it");
}

/// A ClusterRole labelled to aggregate into `view` extends it: stored in `view`'s rules (the
/// aggregation controller) and granted to everyone bound to `view` at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_cluster_role_aggregates_into_view() {
    let (server, _files) = start("rbac-aggregation", Backend::Memory).await;
    let k = server.kubectl();
    k.run(&["create", "clusterrolebinding", "bob-views", "--clusterrole=view", "--user=bob"]).await.ok();
    await_yes(&k, &["list", "pods", "--as", "bob"]).await;
    // (A SubjectAccessReview: kubectl cannot name a resource discovery does not list.)
    let bob_may_list_widgets = || async {
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "bob", "resourceAttributes": {"group": "example.com", "resource": "widgets", "verb": "list"}}});
        let response = server
            .http
            .post(server.api("/apis/authorization.k8s.io/v1/subjectaccessreviews"))
            .bearer_auth("admin-token")
            .json(&review)
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        body["status"]["allowed"] == true
    };
    assert!(!bob_may_list_widgets().await);
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]});
    k.run_with_input(&["create", "-f", "-"], &role.to_string()).await.ok();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !bob_may_list_widgets().await {
        assert!(Instant::now() < deadline, "bob never got the aggregated rule");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let view = k.get_json(&["clusterrole", "view"]).await;
        let stored = view["rules"].as_array().unwrap().iter().any(|r| r["resources"] == json!(["widgets"]));
        if stored {
            break;
        }
        assert!(Instant::now() < deadline, "view never held the widget rule: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
