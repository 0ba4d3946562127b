//! Server-side printing: `meta.k8s.io` Tables, with the columns and cell logic of
//! kube-apiserver's printers (`pkg/printers/internalversion/printers.go`) for the kinds the
//! registry describes.

use std::time::SystemTime;

use bytes::{BufMut, Bytes, BytesMut};
use listwatch_gocompat::duration::human_duration;
use listwatch_meta::object::lookup;
use listwatch_meta::registry::{Cell, PrinterColumn};
use listwatch_meta::{Object, Resource};
use serde_json::{Map, Value, json};

use crate::{IncludeObject, metadata_json};

/// A Table of `objects`. `list_meta` is the list's metadata JSON (lists), else the single
/// object's resourceVersion is used. `with_header` adds the column definitions.
pub(crate) fn table(
    resource: &Resource,
    objects: &[&Object],
    v1beta1: bool,
    include: IncludeObject,
    with_header: bool,
    list_meta: Option<&str>,
) -> Bytes {
    let version = if v1beta1 { "v1beta1" } else { "v1" };
    let meta = match list_meta {
        Some(m) => m.to_string(),
        None => {
            json!({"resourceVersion": objects.first().map(|o| o.resource_version().to_string()).unwrap_or_default()})
                .to_string()
        }
    };
    let columns = if with_header {
        match resource.dynamic {
            Some(dynamic) => dynamic.column_definitions().to_string(),
            None => Value::Array(resource.printer_columns.iter().map(column_definition).collect()).to_string(),
        }
    } else {
        "null".to_string()
    };
    let mut out = BytesMut::new();
    out.put_slice(
        format!("{{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/{version}\",\"metadata\":{meta},\"columnDefinitions\":{columns},\"rows\":[")
            .as_bytes(),
    );
    let now = SystemTime::now();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        write_row(&mut out, resource, object, v1beta1, include, now);
    }
    out.put_slice(b"]}");
    out.freeze()
}

fn column_definition(c: &PrinterColumn) -> Value {
    json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})
}

/// Appends one row. Rows are made for each request, as kube-apiserver makes them: a row
/// memoized on the object outlived the `kubectl get` that asked for it and held more than the
/// object's own size for every object ever listed as a table (its `includeObject=Metadata`
/// part is the whole metadata), for a saving only a repeated `kubectl get` of unchanged
/// objects would see.
fn write_row(
    out: &mut BytesMut,
    resource: &Resource,
    object: &Object,
    v1beta1: bool,
    include: IncludeObject,
    now: SystemTime,
) {
    let value: Value = serde_json::from_slice(object.json()).expect("an object's JSON parses");
    let cells = match resource.dynamic {
        // A CRD's columns may hold several dates anywhere in the row.
        Some(dynamic) => Value::Array(dynamic.cells(&value, now)).to_string(),
        None => {
            let cells: Vec<String> = resource
                .printer_columns
                .iter()
                .map(|column| match column.cell {
                    Cell::Age => Value::String(age(object_value_creation(object), now)).to_string(),
                    other => cell(other, object, &value).to_string(),
                })
                .collect();
            format!("[{}]", cells.join(","))
        }
    };
    out.put_slice(format!("{{\"cells\":{cells}{}}}", object_part(object, v1beta1, include)).as_bytes());
}

/// `,"object":...` of a row, as `includeObject` asks.
fn object_part(object: &Object, v1beta1: bool, include: IncludeObject) -> String {
    match include {
        IncludeObject::None => String::new(),
        IncludeObject::Metadata => {
            format!(
                ",\"object\":{}",
                std::str::from_utf8(&metadata_json(object, v1beta1, false)).expect("JSON is UTF-8")
            )
        }
        IncludeObject::Object => format!(",\"object\":{}", std::str::from_utf8(object.json()).expect("JSON is UTF-8")),
    }
}

fn object_value_creation(object: &Object) -> Option<SystemTime> {
    // The creation timestamp sits early in the canonical JSON; a targeted parse of the
    // metadata avoids decoding the whole object for every row.
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "creationTimestamp")]
        creation_timestamp: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Partial {
        metadata: Meta,
    }
    let partial: Partial = serde_json::from_slice(object.json()).ok()?;
    humantime::parse_rfc3339(&partial.metadata.creation_timestamp?).ok()
}

/// kube's `translateTimestampSince`.
fn age(created: Option<SystemTime>, now: SystemTime) -> String {
    let Some(created) = created else { return "<unknown>".into() };
    match now.duration_since(created) {
        Ok(d) => human_duration(d.as_secs() as i64),
        Err(e) if e.duration().as_secs() < 2 => "0s".into(),
        Err(_) => "<invalid>".into(),
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn int(v: &Value, path: &str) -> i64 {
    lookup(v, path).and_then(Value::as_i64).unwrap_or(0)
}

fn cell(cell: Cell, object: &Object, v: &Value) -> Value {
    match cell {
        Cell::Name => Value::String(object.name().into()),
        Cell::Age => Value::Null,
        Cell::Path(path) => Value::String(text(lookup(v, path)).unwrap_or_else(|| "<none>".into())),
        Cell::Int(path) => Value::from(int(v, path)),
        Cell::ListLen(path) => Value::from(lookup(v, path).and_then(Value::as_array).map_or(0, Vec::len)),
        Cell::MapLen(a, b) => {
            let len = |p| lookup(v, p).and_then(Value::as_object).map_or(0, Map::len);
            Value::from(len(a) + len(b))
        }
        Cell::PodReady | Cell::PodStatus | Cell::PodRestarts => {
            let pod = pod_summary(v);
            match cell {
                Cell::PodReady => Value::String(format!("{}/{}", pod.ready, pod.total)),
                Cell::PodStatus => Value::String(pod.reason),
                _ => Value::String(pod.restarts),
            }
        }
        Cell::ReadyOfDesired => {
            let desired = lookup(v, "spec.replicas").and_then(Value::as_i64).unwrap_or(1);
            Value::String(format!("{}/{desired}", int(v, "status.readyReplicas")))
        }
        Cell::NamespaceStatus => Value::String(text(lookup(v, "status.phase")).unwrap_or_default()),
        Cell::ServicePorts => Value::String(service_ports(v)),
        Cell::ServiceExternalIp => Value::String(service_external_ip(v)),
        Cell::EndpointsAddresses => Value::String(endpoints(v)),
        Cell::NodeStatus => Value::String(node_status(v)),
        Cell::NodeRoles => Value::String(node_roles(v)),
        Cell::CreatedAt => lookup(v, "metadata.creationTimestamp").cloned().unwrap_or(Value::Null),
        Cell::RoleRef => Value::String(format!(
            "{}/{}",
            text(lookup(v, "roleRef.kind")).unwrap_or_default(),
            text(lookup(v, "roleRef.name")).unwrap_or_default()
        )),
        Cell::Subjects(kind) => Value::String(subjects(v, kind)),
        Cell::ParamKind => Value::String(match lookup(v, "spec.paramKind") {
            Some(kind) => format!(
                "{}/{}",
                text(kind.get("apiVersion")).unwrap_or_default(),
                text(kind.get("kind")).unwrap_or_default()
            ),
            None => "<unset>".into(),
        }),
        Cell::ParamRef => Value::String(param_ref(v)),
    }
}

/// kubectl's ParamRef cell of a ValidatingAdmissionPolicyBinding.
fn param_ref(v: &Value) -> String {
    let Some(param_ref) = lookup(v, "spec.paramRef") else { return "<unset>".into() };
    let name = text(param_ref.get("name")).unwrap_or_default();
    if !name.is_empty() {
        return match text(param_ref.get("namespace")).filter(|ns| !ns.is_empty()) {
            Some(ns) => format!("{ns}/{name}"),
            // Whether the param is cluster-scoped is not known here: kube writes `*`.
            None => format!("*/{name}"),
        };
    }
    // kube prints the selector's protobuf text; its label-selector form reads the same way.
    match param_ref.get("selector").and_then(listwatch_meta::selector::LabelSelector::from_api) {
        Some(selector) => selector.to_string(),
        None => "<unset>".into(),
    }
}

/// kubectl's subjects cell: the names of one kind, comma-separated; a service account as
/// `namespace/name`.
fn subjects(v: &Value, kind: &str) -> String {
    let Some(subjects) = lookup(v, "subjects").and_then(Value::as_array) else { return String::new() };
    let names: Vec<String> = subjects
        .iter()
        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
        .map(|s| {
            let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
            match s.get("namespace").and_then(Value::as_str) {
                Some(ns) if kind == "ServiceAccount" => format!("{ns}/{name}"),
                _ => name.to_string(),
            }
        })
        .collect();
    names.join(", ")
}

struct PodSummary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: String,
}

/// kube's `printPod` (the columns READY, STATUS, RESTARTS).
fn pod_summary(pod: &Value) -> PodSummary {
    let empty = Vec::new();
    let list = |path| lookup(pod, path).and_then(Value::as_array).unwrap_or(&empty);
    let total = list("spec.containers").len();
    let mut reason = text(lookup(pod, "status.phase")).unwrap_or_default();
    if let Some(r) = text(lookup(pod, "status.reason")) {
        reason = r;
    }
    let mut restarts = 0;
    let mut ready = 0;
    let mut last_restart: Option<SystemTime> = None;
    let mut initializing = false;
    let init_statuses = list("status.initContainerStatuses");
    let init_count = list("spec.initContainers").len();
    for (i, c) in init_statuses.iter().enumerate() {
        restarts += int(c, "restartCount");
        let terminated = lookup(c, "state.terminated");
        let waiting_reason = text(lookup(c, "state.waiting.reason"));
        if terminated.is_some_and(|t| int(t, "exitCode") == 0) {
            continue;
        }
        initializing = true;
        reason = match (terminated, waiting_reason) {
            (Some(t), _) => match text(t.get("reason")) {
                Some(r) => format!("Init:{r}"),
                None if int(t, "signal") != 0 => format!("Init:Signal:{}", int(t, "signal")),
                None => format!("Init:ExitCode:{}", int(t, "exitCode")),
            },
            (None, Some(w)) if w != "PodInitializing" => format!("Init:{w}"),
            _ => format!("Init:{i}/{init_count}"),
        };
        break;
    }
    if !initializing {
        restarts = 0;
        let mut has_running = false;
        for c in list("status.containerStatuses").iter().rev() {
            restarts += int(c, "restartCount");
            if let Some(finished) =
                text(lookup(c, "lastState.terminated.finishedAt")).and_then(|t| humantime::parse_rfc3339(&t).ok())
            {
                last_restart = Some(last_restart.map_or(finished, |l| l.max(finished)));
            }
            if let Some(w) = text(lookup(c, "state.waiting.reason")) {
                reason = w;
            } else if let Some(t) = lookup(c, "state.terminated") {
                reason = match text(t.get("reason")) {
                    Some(r) => r,
                    None if int(t, "signal") != 0 => format!("Signal:{}", int(t, "signal")),
                    None => format!("ExitCode:{}", int(t, "exitCode")),
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true) && lookup(c, "state.running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let ready_condition = list("status.conditions").iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
            reason = if ready_condition { "Running".into() } else { "NotReady".into() };
        }
    }
    let phase = text(lookup(pod, "status.phase")).unwrap_or_default();
    if lookup(pod, "metadata.deletionTimestamp").is_some_and(|t| !t.is_null()) {
        if text(lookup(pod, "status.reason")).as_deref() == Some("NodeLost") {
            reason = "Unknown".into();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".into();
        }
    }
    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", age(Some(t), SystemTime::now())),
        _ => restarts.to_string(),
    };
    PodSummary { ready, total, reason, restarts }
}

fn service_ports(svc: &Value) -> String {
    let ports: Vec<String> = lookup(svc, "spec.ports")
        .and_then(Value::as_array)
        .map(|ports| {
            ports
                .iter()
                .map(|p| {
                    let protocol = text(p.get("protocol")).unwrap_or_else(|| "TCP".into());
                    let port = int(p, "port");
                    match p.get("nodePort").and_then(Value::as_i64).filter(|n| *n != 0) {
                        Some(node) => format!("{port}:{node}/{protocol}"),
                        None => format!("{port}/{protocol}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if ports.is_empty() { "<none>".into() } else { ports.join(",") }
}

fn service_external_ip(svc: &Value) -> String {
    let ips: Vec<String> = lookup(svc, "spec.externalIPs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| text(Some(v))).collect())
        .unwrap_or_default();
    let ty = text(lookup(svc, "spec.type")).unwrap_or_else(|| "ClusterIP".into());
    match ty.as_str() {
        "ExternalName" => text(lookup(svc, "spec.externalName")).unwrap_or_else(|| "<none>".into()),
        "LoadBalancer" => {
            let mut all: Vec<String> = lookup(svc, "status.loadBalancer.ingress")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|i| text(i.get("ip")).or_else(|| text(i.get("hostname")))).collect())
                .unwrap_or_default();
            all.extend(ips);
            if all.is_empty() { "<pending>".into() } else { all.join(",") }
        }
        _ if !ips.is_empty() => ips.join(","),
        _ => "<none>".into(),
    }
}

fn endpoints(ep: &Value) -> String {
    let mut list = Vec::new();
    for subset in lookup(ep, "subsets").and_then(Value::as_array).into_iter().flatten() {
        let ports: Vec<i64> = subset
            .get("ports")
            .and_then(Value::as_array)
            .map(|p| p.iter().map(|p| int(p, "port")).collect())
            .unwrap_or_default();
        for addr in subset.get("addresses").and_then(Value::as_array).into_iter().flatten() {
            let ip = text(addr.get("ip")).unwrap_or_default();
            if ports.is_empty() {
                list.push(ip.clone());
            }
            for port in &ports {
                list.push(format!("{ip}:{port}"));
            }
        }
    }
    match list.len() {
        0 => "<none>".into(),
        n if n > 3 => format!("{} + {} more...", list[..3].join(","), n - 3),
        _ => list.join(","),
    }
}

fn node_status(node: &Value) -> String {
    let ready = lookup(node, "status.conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready")))
        .and_then(|c| c.get("status").and_then(Value::as_str).map(str::to_string));
    // kube's `printNode`: any Ready status but True (False, Unknown) is NotReady; no Ready
    // condition at all is Unknown.
    let mut status = match ready.as_deref() {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if lookup(node, "spec.unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

fn node_roles(node: &Value) -> String {
    let mut roles: Vec<String> = lookup(node, "metadata.labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| {
                    k.strip_prefix("node-role.kubernetes.io/")
                        .map(str::to_string)
                        .or_else(|| (k == "kubernetes.io/role").then(|| v.as_str().unwrap_or("").to_string()))
                })
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    if roles.is_empty() { "<none>".into() } else { roles.join(",") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listwatch_meta::Registry;

    #[test]
    fn pod_rows() {
        let pods = Registry.find("", "v1", "pods").unwrap();
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let o = Object::from_value(pods, pod, 7).unwrap();
        let t: Value = serde_json::from_slice(&table(pods, &[&o], false, IncludeObject::None, true, None)).unwrap();
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "p");
        assert_eq!(cells[1], "1/2");
        assert_eq!(cells[2], "CrashLoopBackOff");
        assert_eq!(cells[3], "1");
        assert!(cells[4].as_str().unwrap().ends_with('y') || cells[4].as_str().unwrap().contains('y'));
        assert_eq!(t["columnDefinitions"][1]["name"], "Ready");
        assert!(t["rows"][0].get("object").is_none());
        // The same row again (memoized) with a header-less table.
        let t2: Value = serde_json::from_slice(&table(pods, &[&o], false, IncludeObject::None, false, None)).unwrap();
        assert_eq!(t2["rows"][0]["cells"], *cells);
        assert!(t2["columnDefinitions"].is_null());
    }
}
