//! The default roles and bindings kube-apiserver writes at start (its RBAC post-start hook,
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`): what users and tools expect to find on
//! any cluster. `cluster-admin` for `system:masters`; the user-facing `admin`, `edit` and
//! `view`, aggregated from the `system:aggregate-to-*` roles (so a CRD's author can extend
//! them with a labelled ClusterRole, as on a real cluster); discovery, the self reviews and
//! the public health paths for everyone who is authenticated. Every one carries kube's
//! `kubernetes.io/bootstrapping: rbac-defaults` label and `autoupdate` annotation.
//!
//! Only the roles a client can tell apart are here: not kube's controller, node and
//! certificate roles, which bind identities no listwatch component uses. A default role or
//! binding that already exists is reconciled as kube reconciles it: while its
//! `rbac.authorization.kubernetes.io/autoupdate` annotation is `"true"`, the rules (or
//! subjects) the default has and it lacks are added; with the annotation `"false"` it is left
//! as its owner made it.

use listwatch_storage::StorageError;
use serde_json::{Value, json};

use super::rbac::GROUP;
use crate::state::ApiState;

/// (apiGroups, resources, verbs) of one rule.
type Rule = (&'static [&'static str], &'static [&'static str], &'static [&'static str]);

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const ALL: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

const AGGREGATE_TO_ADMIN: &[Rule] = &[
    (&["authorization.k8s.io"], &["localsubjectaccessreviews"], &["create"]),
    (&[GROUP], &["rolebindings", "roles"], ALL),
];

const AGGREGATE_TO_EDIT: &[Rule] = &[
    (&[""], &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], READ),
    (&[""], &["serviceaccounts"], &["impersonate"]),
    (&[""], &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], WRITE),
    (&[""], &["pods/eviction"], &["create"]),
    (
        &[""],
        &[
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
        WRITE,
    ),
    (&[""], &["serviceaccounts/token"], &["create"]),
    (
        &["apps"],
        &[
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
        WRITE,
    ),
    (&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
    (&["batch"], &["cronjobs", "jobs"], WRITE),
    (
        &["extensions"],
        &[
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
        WRITE,
    ),
    (&["policy"], &["poddisruptionbudgets"], WRITE),
    (&["networking.k8s.io"], &["ingresses", "networkpolicies"], WRITE),
    (&["coordination.k8s.io"], &["leases"], ALL),
];

const AGGREGATE_TO_VIEW: &[Rule] = &[
    (
        &[""],
        &[
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
        READ,
    ),
    (
        &[""],
        &[
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
        READ,
    ),
    (&[""], &["namespaces"], READ),
    (&["discovery.k8s.io"], &["endpointslices"], READ),
    (
        &["apps"],
        &[
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
        READ,
    ),
    (&["autoscaling"], &["horizontalpodautoscalers", "horizontalpodautoscalers/status"], READ),
    (&["batch"], &["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
    (
        &["extensions"],
        &[
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ],
        READ,
    ),
    (&["policy"], &["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
    (&["networking.k8s.io"], &["ingresses", "ingresses/status", "networkpolicies"], READ),
];

/// Rules over paths rather than resources: (nonResourceURLs, verbs).
const DISCOVERY_PATHS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];
const PUBLIC_INFO_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];
const MONITORING_PATHS: &[&str] =
    &["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"];

fn rules(rules: &[Rule]) -> Vec<Value> {
    rules
        .iter()
        .map(|(groups, resources, verbs)| json!({"apiGroups": groups, "resources": resources, "verbs": verbs}))
        .collect()
}

fn path_rule(paths: &[&str]) -> Value {
    json!({"nonResourceURLs": paths, "verbs": ["get"]})
}

fn metadata(name: &str, extra_labels: &[&str]) -> Value {
    let mut labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    for label in extra_labels {
        labels[*label] = json!("true");
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn aggregation(label: &str) -> Value {
    json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]})
}

const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The default ClusterRoles, the aggregated ones with the rules kube's aggregation controller
/// gives them (the rules of the roles each picks, by name order, each once).
pub fn cluster_roles() -> Vec<Value> {
    let union = |parts: &[&Vec<Value>]| {
        let mut all: Vec<Value> = Vec::new();
        for rule in parts.iter().flat_map(|p| p.iter()) {
            if !all.contains(rule) {
                all.push(rule.clone());
            }
        }
        all
    };
    let to_view = rules(AGGREGATE_TO_VIEW);
    let to_edit = rules(AGGREGATE_TO_EDIT);
    let to_admin = rules(AGGREGATE_TO_ADMIN);
    // edit picks system:aggregate-to-edit and view; admin picks edit and
    // system:aggregate-to-admin.
    let view = to_view.clone();
    let edit = union(&[&to_edit, &view]);
    let admin = union(&[&edit, &to_admin]);
    let role =
        |name: &str, labels: &[&str], rules: Vec<Value>| json!({"metadata": metadata(name, labels), "rules": rules});
    let aggregated = |name: &str, labels: &[&str], label: &str, rules: Vec<Value>| json!({"metadata": metadata(name, labels), "aggregationRule": aggregation(label), "rules": rules});
    vec![
        aggregated("admin", &[], TO_ADMIN, admin),
        json!({"metadata": metadata("cluster-admin", &[]), "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ]}),
        aggregated("edit", &[TO_ADMIN], TO_EDIT, edit),
        role("system:aggregate-to-admin", &[TO_ADMIN], to_admin),
        role("system:aggregate-to-edit", &[TO_EDIT], to_edit),
        role("system:aggregate-to-view", &[TO_VIEW], to_view),
        role(
            "system:auth-delegator",
            &[],
            rules(&[
                (&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                (&["authorization.k8s.io"], &["subjectaccessreviews"], &["create"]),
            ]),
        ),
        role(
            "system:basic-user",
            &[],
            rules(&[
                (&["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
                (&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
            ]),
        ),
        role("system:discovery", &[], vec![path_rule(DISCOVERY_PATHS)]),
        role("system:monitoring", &[], vec![path_rule(MONITORING_PATHS)]),
        role("system:public-info-viewer", &[], vec![path_rule(PUBLIC_INFO_PATHS)]),
        role(
            "system:service-account-issuer-discovery",
            &[],
            vec![path_rule(&["/.well-known/openid-configuration", "/openid/v1/jwks"])],
        ),
        aggregated("view", &[TO_EDIT], TO_VIEW, view),
    ]
}

/// The default ClusterRoleBindings: each binds the ClusterRole of its name to groups.
pub fn cluster_role_bindings() -> Vec<Value> {
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> =
            groups.iter().map(|g| json!({"kind": "Group", "apiGroup": GROUP, "name": g})).collect();
        json!({
            "metadata": metadata(name, &[]),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        })
    };
    vec![
        binding("cluster-admin", &[super::SYSTEM_MASTERS]),
        binding("system:basic-user", &["system:authenticated"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:monitoring", &["system:monitoring"]),
        binding("system:public-info-viewer", &["system:authenticated", "system:unauthenticated"]),
        binding("system:service-account-issuer-discovery", &["system:serviceaccounts"]),
    ]
}

/// Writes the default roles and bindings that do not exist yet.
pub async fn ensure(state: &ApiState) -> Result<(), StorageError> {
    let sets = [("clusterroles", cluster_roles()), ("clusterrolebindings", cluster_role_bindings())];
    for (plural, objects) in sets {
        let resource = listwatch_meta::Registry.find(GROUP, "v1", plural).expect("registered");
        let store = state.store_of(resource);
        for object in objects {
            let Value::Object(mut object) = object else { continue };
            let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
            object.insert("apiVersion".into(), json!(resource.api_version()));
            object.insert("kind".into(), json!(resource.kind));
            crate::registry::strategy::prepare_for_create(resource, &mut object);
            let bytes = listwatch_meta::object::to_storage_bytes(resource, Value::Object(object));
            let wanted = serde_json::from_slice::<Value>(&bytes).unwrap_or_default();
            match state.storage.create(store.key(None, &name).as_bytes(), bytes).await {
                Ok(_) => {}
                Err(StorageError::AlreadyExists) => reconcile(state, store, &name, &wanted).await?,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Adds to an existing default role or binding what the default has and it lacks (its
/// `rules`, or `subjects`), unless its owner turned `autoupdate` off. A write that loses a
/// race is left to the next start.
async fn reconcile(
    state: &ApiState,
    store: &crate::registry::ResourceStore,
    name: &str,
    wanted: &Value,
) -> Result<(), StorageError> {
    let Some(existing) = store.read(None, name).await.map_err(|e| StorageError::Unavailable(e.to_string()))? else {
        return Ok(());
    };
    let mut current = existing.value();
    let autoupdate = current.pointer("/metadata/annotations/rbac.authorization.kubernetes.io~1autoupdate");
    if autoupdate.and_then(Value::as_str) == Some("false") {
        return Ok(());
    }
    let field = if store.resource.kind == "ClusterRole" { "rules" } else { "subjects" };
    let mut list = current.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
    let before = list.len();
    for item in wanted.get(field).and_then(Value::as_array).into_iter().flatten() {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
    if list.len() == before {
        return Ok(());
    }
    current[field] = Value::Array(list);
    if let Some(metadata) = current.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
    }
    let bytes = listwatch_meta::object::to_storage_bytes(store.resource, current);
    match state.storage.update(store.key(None, name).as_bytes(), bytes, existing.resource_version()).await {
        Ok(_) | Err(StorageError::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_roles_hold_what_they_pick() {
        let roles = cluster_roles();
        let find = |name: &str| roles.iter().find(|r| r["metadata"]["name"] == name).unwrap()["rules"].clone();
        let view = find("view");
        let edit = find("edit");
        let admin = find("admin");
        for rule in view.as_array().unwrap() {
            assert!(edit.as_array().unwrap().contains(rule), "edit includes view: {rule}");
        }
        for rule in edit.as_array().unwrap() {
            assert!(admin.as_array().unwrap().contains(rule), "admin includes edit: {rule}");
        }
        assert!(
            admin.as_array().unwrap().iter().any(|r| r["resources"] == json!(["rolebindings", "roles"])),
            "admin may manage roles in its namespace"
        );
        assert!(
            !view.as_array().unwrap().iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("secrets")))
        );
    }
}
