//! kube's scheme defaulting for the built-in kinds served (k8s.io/kubernetes
//! `pkg/apis/core/v1/defaults.go` and `pkg/apis/apps/v1/defaults.go`, kube 1.32), applied to
//! every object a client writes, so that controllers read what a real cluster would return:
//! a Pod's `restartPolicy`, `dnsPolicy`, `schedulerName`, `terminationGracePeriodSeconds`,
//! each container's `imagePullPolicy` and termination message fields, a Deployment's strategy,
//! `revisionHistoryLimit` and `progressDeadlineSeconds`, a Service's `sessionAffinity`, `type`
//! and traffic policies, and so on.
//!
//! kube defaults when it decodes a request body (and the result of a patch), before
//! validation; a field the client set is never changed. What kube fills in through admission
//! plugins (a pod's service account, priority, default tolerations) or allocators (a
//! Service's cluster IP) is not here: the registry's strategies do what of it listwatch does.

use serde_json::{Map, Value, json};

/// Sets `key` to `value` when it is absent or the empty string (Go's zero value).
fn set_if_empty(object: &mut Map<String, Value>, key: &str, value: &str) {
    if object.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
        object.insert(key.to_string(), json!(value));
    }
}

/// Fills in kube's defaults for an object of `group`/`kind` (kinds without defaults are left
/// as they are).
pub fn apply_defaults(group: &str, kind: &str, object: &mut Map<String, Value>) {
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = object_at(object, "spec") {
                pod_spec(spec);
                pod_only(spec);
            }
        }
        ("", "Secret") => {
            set(object, "type", || json!("Opaque"));
        }
        ("", "Service") => {
            if let Some(spec) = object_at(object, "spec") {
                service_spec(spec);
            }
        }
        ("", "Endpoints") => {
            for subset in objects_in(object, "subsets") {
                for port in objects_in(subset, "ports") {
                    set(port, "protocol", || json!("TCP"));
                }
            }
        }
        ("", "Node") => {
            // SetDefaults_NodeStatus: allocatable is the capacity unless said otherwise.
            if let Some(status) = object_at(object, "status")
                && let Some(capacity) = status.get("capacity").cloned()
            {
                set(status, "allocatable", || capacity);
            }
        }
        ("apps", "Deployment") => {
            if let Some(spec) = object_at(object, "spec") {
                deployment_spec(spec);
            }
        }
        ("apps", "ReplicaSet") => {
            if let Some(spec) = object_at(object, "spec") {
                set(spec, "replicas", || json!(1));
                template_spec(spec);
            }
        }
        // rbac/v1's SetDefaults_RoleBinding and SetDefaults_Subject: the roleRef's group, and
        // the group of User and Group subjects, are RBAC's unless given.
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            if let Some(role_ref) = object_at(object, "roleRef") {
                set_if_empty(role_ref, "apiGroup", "rbac.authorization.k8s.io");
            }
            for subject in objects_in(object, "subjects") {
                if matches!(subject.get("kind").and_then(Value::as_str), Some("User" | "Group")) {
                    set_if_empty(subject, "apiGroup", "rbac.authorization.k8s.io");
                }
            }
        }
        // admissionregistration/v1's SetDefaults_ValidatingWebhook / _MutatingWebhook,
        // SetDefaults_Rule and SetDefaults_ServiceReference.
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => {
            let mutating = kind == "MutatingWebhookConfiguration";
            for webhook in objects_in(object, "webhooks") {
                webhook_defaults(webhook, mutating);
            }
        }
        // SetDefaults_ValidatingAdmissionPolicySpec and SetDefaults_MatchResources.
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            if let Some(spec) = object_at(object, "spec") {
                set(spec, "failurePolicy", || json!("Fail"));
                if let Some(constraints) = object_at(spec, "matchConstraints") {
                    match_resources_defaults(constraints);
                }
            }
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            if let Some(resources) = object_at(object, "spec").and_then(|s| object_at(s, "matchResources")) {
                match_resources_defaults(resources);
            }
        }
        _ => {}
    }
}

/// The defaults of a policy's or binding's `MatchResources`.
fn match_resources_defaults(resources: &mut Map<String, Value>) {
    set(resources, "matchPolicy", || json!("Equivalent"));
    set(resources, "namespaceSelector", || json!({}));
    set(resources, "objectSelector", || json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in objects_in(resources, key) {
            set(rule, "scope", || json!("*"));
        }
    }
}

/// The defaults of one admission webhook.
fn webhook_defaults(webhook: &mut Map<String, Value>, mutating: bool) {
    set(webhook, "failurePolicy", || json!("Fail"));
    set(webhook, "matchPolicy", || json!("Equivalent"));
    set(webhook, "namespaceSelector", || json!({}));
    set(webhook, "objectSelector", || json!({}));
    set(webhook, "timeoutSeconds", || json!(10));
    if mutating {
        set(webhook, "reinvocationPolicy", || json!("Never"));
    }
    for rule in objects_in(webhook, "rules") {
        set(rule, "scope", || json!("*"));
    }
    if let Some(service) = object_at(webhook, "clientConfig").and_then(|c| object_at(c, "service")) {
        set(service, "port", || json!(443));
    }
}

/// SetDefaults_Deployment.
fn deployment_spec(spec: &mut Map<String, Value>) {
    set(spec, "replicas", || json!(1));
    let strategy = entry_object(spec, "strategy");
    set(strategy, "type", || json!("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        let rolling = entry_object(strategy, "rollingUpdate");
        set(rolling, "maxUnavailable", || json!("25%"));
        set(rolling, "maxSurge", || json!("25%"));
    }
    set(spec, "revisionHistoryLimit", || json!(10));
    set(spec, "progressDeadlineSeconds", || json!(600));
    template_spec(spec);
}

/// The pod template of a workload gets the PodSpec defaults (not the Pod-only ones).
fn template_spec(spec: &mut Map<String, Value>) {
    if let Some(template) = object_at(spec, "template")
        && let Some(pod) = object_at(template, "spec")
    {
        pod_spec(pod);
    }
}

/// SetDefaults_PodSpec and what the generated defaulters do for everything inside a PodSpec.
fn pod_spec(spec: &mut Map<String, Value>) {
    set(spec, "dnsPolicy", || json!("ClusterFirst"));
    set(spec, "restartPolicy", || json!("Always"));
    set(spec, "securityContext", || json!({}));
    set(spec, "terminationGracePeriodSeconds", || json!(30));
    set(spec, "schedulerName", || json!("default-scheduler"));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for container in objects_in(spec, list) {
            container_defaults(container);
        }
    }
    for volume in objects_in(spec, "volumes") {
        volume_defaults(volume);
    }
}

/// SetDefaults_Pod: what only a Pod gets, not a template.
fn pod_only(spec: &mut Map<String, Value>) {
    set(spec, "enableServiceLinks", || json!(true));
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in ["initContainers", "containers"] {
        for container in objects_in(spec, list) {
            // Limits without requests: the requests are the limits.
            let limits = container.get("resources").and_then(|r| r.get("limits")).and_then(Value::as_object).cloned();
            if let Some(limits) = limits.filter(|l| !l.is_empty()) {
                let requests = entry_object(entry_object(container, "resources"), "requests");
                for (name, quantity) in limits {
                    requests.entry(name).or_insert(quantity);
                }
            }
            if host_network {
                for port in objects_in(container, "ports") {
                    if let Some(container_port) = port.get("containerPort").cloned() {
                        set(port, "hostPort", || container_port);
                    }
                }
            }
        }
    }
}

/// SetDefaults_Container, its ports, probes, lifecycle handlers and env sources.
fn container_defaults(container: &mut Map<String, Value>) {
    let image = container.get("image").and_then(Value::as_str).unwrap_or_default().to_string();
    set(container, "imagePullPolicy", || json!(pull_policy(&image)));
    set(container, "terminationMessagePath", || json!("/dev/termination-log"));
    set(container, "terminationMessagePolicy", || json!("File"));
    set(container, "resources", || json!({}));
    for port in objects_in(container, "ports") {
        set(port, "protocol", || json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = object_at(container, probe) {
            set(probe, "timeoutSeconds", || json!(1));
            set(probe, "periodSeconds", || json!(10));
            set(probe, "successThreshold", || json!(1));
            set(probe, "failureThreshold", || json!(3));
            handler_defaults(probe);
        }
    }
    if let Some(lifecycle) = object_at(container, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(hook) = object_at(lifecycle, hook) {
                handler_defaults(hook);
            }
        }
    }
    for env in objects_in(container, "env") {
        if let Some(field_ref) = object_at(env, "valueFrom").and_then(|from| object_at(from, "fieldRef")) {
            set(field_ref, "apiVersion", || json!("v1"));
        }
    }
}

/// SetDefaults_HTTPGetAction (path `/`, scheme HTTP) and a gRPC probe's service.
fn handler_defaults(handler: &mut Map<String, Value>) {
    if let Some(http_get) = object_at(handler, "httpGet") {
        set(http_get, "path", || json!("/"));
        set(http_get, "scheme", || json!("HTTP"));
    }
    if let Some(grpc) = object_at(handler, "grpc") {
        set(grpc, "service", || json!(""));
    }
}

/// kube's image pull policy: `Always` for `:latest` or no tag (and no digest), else
/// `IfNotPresent`.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // The tag follows the last ':' after the last '/' (a registry's port is before a '/').
    let last_part = image.rsplit('/').next().unwrap_or(image);
    match last_part.rsplit_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

/// SetDefaults_Volume (no source: an emptyDir) and the default modes of projected files.
fn volume_defaults(volume: &mut Map<String, Value>) {
    const SOURCES: &[&str] = &[
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    ];
    if !SOURCES.iter().any(|source| volume.contains_key(*source)) {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = object_at(volume, source) {
            set(source, "defaultMode", || json!(0o644));
        }
    }
    if let Some(host_path) = object_at(volume, "hostPath") {
        set(host_path, "type", || json!(""));
    }
    if let Some(projected) = object_at(volume, "projected") {
        for projection in objects_in(projected, "sources") {
            if let Some(token) = object_at(projection, "serviceAccountToken") {
                set(token, "expirationSeconds", || json!(3600));
            }
        }
    }
}

/// SetDefaults_Service, and the single-stack IPv4 family kube's allocator records.
fn service_spec(spec: &mut Map<String, Value>) {
    set(spec, "sessionAffinity", || json!("None"));
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        let config = entry_object(spec, "sessionAffinityConfig");
        let client_ip = entry_object(config, "clientIP");
        set(client_ip, "timeoutSeconds", || json!(10800));
    }
    set(spec, "type", || json!("ClusterIP"));
    let service_type = spec.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
    for port in objects_in(spec, "ports") {
        set(port, "protocol", || json!("TCP"));
        let unset = port.get("targetPort").is_none_or(|t| t == &json!(0) || t == &json!(""));
        if unset && let Some(number) = port.get("port").cloned() {
            port.insert("targetPort".into(), number);
        }
    }
    if matches!(service_type.as_str(), "NodePort" | "LoadBalancer") {
        set(spec, "externalTrafficPolicy", || json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", || json!(true));
    }
    if service_type != "ExternalName" {
        set(spec, "internalTrafficPolicy", || json!("Cluster"));
        set(spec, "ipFamilyPolicy", || json!("SingleStack"));
        set(spec, "ipFamilies", || json!(["IPv4"]));
        if let Some(ip) = spec.get("clusterIP").cloned() {
            set(spec, "clusterIPs", || json!([ip]));
        }
    }
}

/// Sets `key` unless the client sent it (a JSON null counts as unset, as Go decodes it).
fn set(object: &mut Map<String, Value>, key: &str, value: impl FnOnce() -> Value) {
    match object.get(key) {
        Some(Value::Null) | None => {
            object.insert(key.into(), value());
        }
        Some(_) => {}
    }
}

/// The object at `key`, if there is one.
fn object_at<'a>(object: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    object.get_mut(key).and_then(Value::as_object_mut)
}

/// The object at `key`, made empty first if missing or not an object.
fn entry_object<'a>(object: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = object.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut().expect("made an object")
}

/// The objects of the list at `key` (none if it is missing or not a list).
fn objects_in<'a>(object: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    object.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(group: &str, kind: &str, object: Value) -> Value {
        let mut object = object.as_object().unwrap().clone();
        apply_defaults(group, kind, &mut object);
        Value::Object(object)
    }

    /// What `kubectl run nginx --image=nginx` stores on kube 1.32 (spec part, before admission).
    #[test]
    fn a_pod_gets_kubes_spec_and_container_defaults() {
        let pod = defaulted("", "Pod", json!({"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}));
        assert_eq!(
            pod["spec"],
            json!({
                "containers": [{
                    "name": "nginx", "image": "nginx", "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "resources": {}
                }],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "securityContext": {},
                "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler",
                "enableServiceLinks": true
            })
        );
    }

    #[test]
    fn what_the_client_set_is_kept() {
        let pod = defaulted(
            "",
            "Pod",
            json!({"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "a", "image": "busybox", "imagePullPolicy": "Never"}]}}),
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 0);
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Never");
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry:5000/team/app", "Always"),
            ("registry:5000/team/app:v2", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
        ] {
            assert_eq!(pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn limits_become_requests_and_probes_get_their_periods() {
        let pod = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "image": "a:1",
                "resources": {"limits": {"cpu": "1"}},
                "ports": [{"containerPort": 80}],
                "readinessProbe": {"httpGet": {"port": 80}},
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
                "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}}),
        );
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["resources"]["requests"], json!({"cpu": "1"}));
        assert_eq!(container["ports"][0]["protocol"], "TCP");
        assert_eq!(
            container["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(pod["spec"]["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(pod["spec"]["volumes"][1]["secret"]["defaultMode"], 420);
    }

    /// `kubectl create deployment nginx --image=nginx` as kube stores it.
    #[test]
    fn a_deployment_gets_its_strategy_limits_and_template_defaults() {
        let deployment = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}),
        );
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["schedulerName"], "default-scheduler");
        // Only a Pod gets enableServiceLinks; a template does not.
        assert!(pod.get("enableServiceLinks").is_none());
        assert_eq!(pod["containers"][0]["terminationMessagePolicy"], "File");
    }

    #[test]
    fn a_recreate_deployment_gets_no_rolling_update() {
        let deployment = defaulted("apps", "Deployment", json!({"spec": {"strategy": {"type": "Recreate"}}}));
        assert_eq!(deployment["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn a_service_gets_affinity_type_policies_and_target_ports() {
        let service = defaulted(
            "",
            "Service",
            json!({"spec": {"clusterIP": "10.96.0.7", "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}}),
        );
        assert_eq!(
            service["spec"],
            json!({"clusterIP": "10.96.0.7",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                          {"port": 443, "targetPort": "https", "protocol": "TCP"}],
                "sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster",
                "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"], "clusterIPs": ["10.96.0.7"]})
        );
        let load_balancer = defaulted("", "Service", json!({"spec": {"type": "LoadBalancer"}}));
        assert_eq!(load_balancer["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(load_balancer["spec"]["allocateLoadBalancerNodePorts"], true);
        let external = defaulted("", "Service", json!({"spec": {"type": "ExternalName"}}));
        assert!(external["spec"].get("ipFamilies").is_none());
    }

    #[test]
    fn a_secret_is_opaque_by_default() {
        assert_eq!(defaulted("", "Secret", json!({}))["type"], "Opaque");
        assert_eq!(defaulted("", "Secret", json!({"type": "kubernetes.io/tls"}))["type"], "kubernetes.io/tls");
    }
}
