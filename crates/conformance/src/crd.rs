//! The CustomResourceDefinition of `--resource custom`: `conformanceblobs.conformance.listwatch.dev`,
//! namespaced, kind `ConformanceBlob`, with a structural schema shaped like a ConfigMap's
//! (`data` and `binaryData`, maps of strings) since the checks write what they would write to a
//! ConfigMap. Its printer columns are `Value` (`.data.value`) and `Age`, so that the Table
//! checks see a CR's columns (computed from JSONPaths, a missing value giving `null`) rather
//! than ConfigMaps' `Data` count.
//!
//! [`install`] creates it, or finds it from an earlier run (it is shared by every run against
//! the server, so runs leave it in place unless `--delete-crd` asks [`delete`] to remove it),
//! and waits until it is Established and its collection answers, as `kubectl wait
//! --for condition=established` and a first LIST would. Then it creates and deletes one probe
//! object: kube-apiserver holds a custom resource's create back 2 s when it comes in the 2 s
//! after the CRD became Established, which would otherwise land in the first checks' timing
//! (a create that returns has waited that window out).

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::resource::Resource;
use crate::{CheckFailure, Target};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// How long a CRD may take to become Established and served (kube: milliseconds on one
/// server, 5 s with several) or to go away.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);

fn path() -> String {
    format!("{CRDS}/{}", Resource::Custom.qualified())
}

/// The definition the run installs.
fn definition() -> Value {
    let resource = Resource::Custom;
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let bytes = json!({"type": "object", "additionalProperties": {"type": "string", "format": "byte"}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": resource.qualified()},
        "spec": {
            "group": resource.group(),
            "scope": "Namespaced",
            "names": {
                "plural": resource.plural(),
                "singular": resource.kind().to_ascii_lowercase(),
                "kind": resource.kind(),
                "listKind": resource.list_kind(),
            },
            "versions": [{
                "name": resource.version(),
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"data": strings, "binaryData": bytes},
                }},
                "additionalPrinterColumns": [
                    {"name": "Value", "type": "string", "jsonPath": ".data.value"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    })
}

/// Creates the CRD (or finds it) and waits until custom resources of it are served.
pub async fn install(target: &Target) -> Result<(), CheckFailure> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let response = target.send(Method::POST, CRDS, Some(&definition())).await?;
        match response.status {
            201 => break,
            409 => {
                let existing = target.get(&path()).await?;
                if existing.status == 404 {
                    continue;
                }
                let crd = existing.expect(200)?;
                if !crd["metadata"]["deletionTimestamp"].is_null() {
                    // Terminating (an earlier run's --delete-crd): wait for it to go, then create.
                    wait_until_gone(target, deadline).await?;
                    continue;
                }
                let spec = &crd["spec"];
                if spec["names"]["kind"] != Resource::Custom.kind() || spec["scope"] != "Namespaced" {
                    return Err(CheckFailure::failed_with(
                        format!(
                            "a CRD named {} exists but is not the conformance suite's (kind {}, namespaced)",
                            Resource::Custom.qualified(),
                            Resource::Custom.kind()
                        ),
                        existing.describe(),
                    ));
                }
                break;
            }
            _ => return Err(CheckFailure::failed_with("creating the CustomResourceDefinition", response.describe())),
        }
    }
    wait_until_served(target, deadline).await?;
    probe_create(target).await
}

/// Creates and deletes one object of the resource in the run's namespace (see the module doc).
async fn probe_create(target: &Target) -> Result<(), CheckFailure> {
    let resource = Resource::Custom;
    let name = "listwatch-conformance-probe";
    let body = resource.object(name, Some(&target.namespace), serde_json::Map::new(), json!({}));
    let collection = resource.collection(&target.namespace);
    target.send(Method::POST, &collection, Some(&body)).await?.expect(201)?;
    let deleted = target.send(Method::DELETE, &format!("{collection}/{name}"), None).await?;
    if !matches!(deleted.status, 200 | 202) {
        return Err(CheckFailure::failed_with(format!("deleting the probe {name}"), deleted.describe()));
    }
    Ok(())
}

/// Waits for `Established=True`, then for the collection to answer a LIST (not a 404).
async fn wait_until_served(target: &Target, deadline: Instant) -> Result<(), CheckFailure> {
    let collection = format!("{}?limit=1", Resource::Custom.collection(&target.namespace));
    loop {
        let crd = target.get(&path()).await?;
        let established = crd.status == 200
            && crd.json()?["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
        if established {
            let list = target.get(&collection).await?;
            if list.status == 200 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(CheckFailure::failed_with(
                    format!("the CRD is Established but its collection was not served within {READY_TIMEOUT:?}"),
                    list.describe(),
                ));
            }
        } else if Instant::now() >= deadline {
            return Err(CheckFailure::failed_with(
                format!("the CRD {} was not Established within {READY_TIMEOUT:?}", Resource::Custom.qualified()),
                crd.describe(),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn wait_until_gone(target: &Target, deadline: Instant) -> Result<(), CheckFailure> {
    loop {
        let crd = target.get(&path()).await?;
        if crd.status == 404 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(CheckFailure::failed_with(
                format!(
                    "the CRD {} was still there {READY_TIMEOUT:?} after its deletion",
                    Resource::Custom.qualified()
                ),
                crd.describe(),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Deletes the CRD (and with it every custom resource of it) and waits until it is gone.
pub async fn delete(target: &Target) -> Result<(), CheckFailure> {
    let response = target.send(Method::DELETE, &path(), None).await?;
    if !matches!(response.status, 200 | 202 | 404) {
        return Err(CheckFailure::failed_with("deleting the CustomResourceDefinition", response.describe()));
    }
    wait_until_gone(target, Instant::now() + READY_TIMEOUT).await
}
