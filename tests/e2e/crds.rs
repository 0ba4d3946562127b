//! CustomResourceDefinitions end to end: kubectl against CRDs and their custom resources
//! ([`kubectl`]), the API's answers as kube gives them ([`api`]), and a CRD's life: names,
//! versions, deletion and restarts ([`lifecycle`]). Every test runs on both backends.
//!
//! The fixture is a CRD as kubebuilder writes one: namespaced, with a status and a scale
//! subresource, printer columns, a selectable field and a list-map field.

use std::time::Duration;

use serde_json::Value;

use crate::support::Server;

mod api;
mod cel;
mod conversion;
mod kubectl;
mod lifecycle;

/// The CRD's name.
pub const CRD_NAME: &str = "crontabs.stable.example.com";
/// Its instances in the default namespace.
pub const CRONTABS: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";
/// Where CRDs are.
pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The kubebuilder-style CRD.
pub const CRD_YAML: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.16.1
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  names:
    kind: CronTab
    listKind: CronTabList
    plural: crontabs
    singular: crontab
    shortNames: [ct]
    categories: [all]
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Schedule, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Image, type: string, priority: 1, jsonPath: .spec.image}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields:
    - jsonPath: .spec.mode
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        description: CronTab is the Schema for the crontabs API
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            description: CronTabSpec defines the desired state of CronTab
            type: object
            required: [cronSpec, image]
            properties:
              cronSpec: {type: string, description: The schedule in cron format.}
              image: {type: string}
              replicas: {type: integer, format: int32, minimum: 1, maximum: 10, default: 1}
              mode: {type: string, enum: [a, b], default: a}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer, format: int32}
          status:
            type: object
            properties:
              replicas: {type: integer, format: int32}
              selector: {type: string}
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string}
"#;

/// The CRD as JSON.
pub fn crd_json() -> Value {
    serde_yaml_ng::from_str(CRD_YAML).expect("the fixture is YAML")
}

/// A CronTab manifest.
pub fn crontab_yaml(name: &str, schedule: &str, replicas: i64) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  cronSpec: \"{schedule}\"\n  image: img-{name}\n  replicas: {replicas}\n  ports:\n  - {{name: http, port: 80}}\n"
    )
}

/// A CronTab as JSON.
pub fn crontab(name: &str) -> Value {
    serde_yaml_ng::from_str(&crontab_yaml(name, "*/5 * * * *", 2)).expect("YAML")
}

/// POSTs `body` as JSON, for a test that reads the response's headers.
pub async fn post_for_headers(server: &Server, path: &str, body: &Value) -> reqwest::Response {
    let request = server.http.post(server.api(path)).header("Content-Type", "application/json");
    request.body(body.to_string()).send().await.expect("request")
}

/// POSTs the fixture CRD and waits until its resources answer (Established).
pub async fn install(server: &Server) -> Value {
    install_crd(server, &crd_json()).await
}

/// POSTs `crd` and waits until it is Established and discovery lists its group-version.
pub async fn install_crd(server: &Server, crd: &Value) -> Value {
    let (code, created) = server.post_json(CRDS, crd).await;
    assert_eq!(code, 201, "{created}");
    let name = crd["metadata"]["name"].as_str().unwrap();
    wait_until(Duration::from_secs(10), || async {
        let (_, now) = server.get(&format!("{CRDS}/{name}")).await;
        established(&now).then_some(now)
    })
    .await
}

/// Whether a CRD's `Established` condition is True.
pub fn established(crd: &Value) -> bool {
    condition(crd, "Established").is_some_and(|c| c["status"] == "True")
}

/// A CRD's condition of `type_`.
pub fn condition<'a>(crd: &'a Value, type_: &str) -> Option<&'a Value> {
    crd["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

/// Polls `check` until it gives a value; panics after `timeout`.
pub async fn wait_until<T, F, Fut>(timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "condition not met within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
