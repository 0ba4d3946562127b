//! JSON → protobuf → JSON for every supported kind, with objects shaped like kube-apiserver's.
//!
//! Each input is written in kube-apiserver's key order (Go struct order, sorted map keys), so
//! comparing serialized text checks the values, the key order and which fields appear. The
//! protobuf in between is also parsed independently with prost-reflect, which must find no
//! field it does not know.

use listwatch_proto::prost_reflect::DynamicMessage;
use listwatch_proto::{check_json_fields, decode_object, encode_object, message_for};
use serde_json::Value;

fn round_trip(group: &str, version: &str, kind: &str, json: &str) -> Vec<u8> {
    let input: Value = serde_json::from_str(json).expect("test JSON parses");
    assert_eq!(
        check_json_fields(group, version, kind, &input).unwrap(),
        Vec::<String>::new(),
        "{kind}: unknown fields"
    );

    let bytes = encode_object(group, version, kind, &input).expect("encodes");
    let descriptor = message_for(group, version, kind).expect("has a schema");
    let parsed = DynamicMessage::decode(descriptor, bytes.as_slice()).expect("prost-reflect parses the encoding");
    assert_eq!(parsed.unknown_fields().count(), 0);

    let decoded = decode_object(group, version, kind, &bytes).expect("decodes");
    assert_eq!(decoded.unknown_fields, Vec::<String>::new());
    assert_eq!(
        serde_json::to_string_pretty(&decoded.object).unwrap(),
        serde_json::to_string_pretty(&input).unwrap(),
        "{kind} did not survive the round trip"
    );
    // Encoding is deterministic: the decoded JSON encodes to the same bytes.
    assert_eq!(encode_object(group, version, kind, &decoded.object).unwrap(), bytes);
    bytes
}

#[test]
fn config_map_with_data_and_binary_data() {
    round_trip(
        "",
        "v1",
        "ConfigMap",
        r#"{
          "kind": "ConfigMap",
          "apiVersion": "v1",
          "metadata": {
            "name": "web-config",
            "namespace": "default",
            "uid": "0b1e6c1a-6f5c-4d0e-9d7a-3f4b9c1e2a10",
            "resourceVersion": "4711",
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"note": "héllo ✓"},
            "managedFields": [
              {
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-01-02T03:04:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:binaryData": {".": {}, "f:logo.png": {}}, "f:data": {".": {}, "f:app.conf": {}}}
              }
            ]
          },
          "immutable": false,
          "data": {"app.conf": "listen 80;\nroot /srv;\n", "empty": ""},
          "binaryData": {"logo.png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"}
        }"#,
    );
}

#[test]
fn secret_with_base64_data() {
    round_trip(
        "",
        "v1",
        "Secret",
        r#"{
          "kind": "Secret",
          "apiVersion": "v1",
          "metadata": {
            "name": "db",
            "namespace": "prod",
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "ownerReferences": [
              {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db", "uid": "1234", "controller": true, "blockOwnerDeletion": false}
            ],
            "finalizers": ["example.com/keep"]
          },
          "immutable": true,
          "data": {"password": "AAECAwT/", "username": "YWRtaW4="},
          "type": "Opaque"
        }"#,
    );
}

#[test]
fn namespace_with_status() {
    round_trip(
        "",
        "v1",
        "Namespace",
        r#"{
          "kind": "Namespace",
          "apiVersion": "v1",
          "metadata": {
            "name": "team-a",
            "uid": "6d6b7b0e-1111-2222-3333-444455556666",
            "resourceVersion": "99",
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "deletionTimestamp": "2024-01-03T00:00:00Z",
            "deletionGracePeriodSeconds": 0,
            "labels": {"kubernetes.io/metadata.name": "team-a"}
          },
          "spec": {"finalizers": ["kubernetes"]},
          "status": {
            "phase": "Terminating",
            "conditions": [
              {
                "type": "NamespaceDeletionDiscoveryFailure",
                "status": "False",
                "lastTransitionTime": "2024-01-03T00:00:01Z",
                "reason": "ResourcesDiscovered",
                "message": "All resources successfully discovered"
              }
            ]
          }
        }"#,
    );
}

#[test]
fn service_account() {
    round_trip(
        "",
        "v1",
        "ServiceAccount",
        r#"{
          "kind": "ServiceAccount",
          "apiVersion": "v1",
          "metadata": {"name": "builder", "namespace": "ci", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "secrets": [{"name": "builder-token"}, {"kind": "Secret", "namespace": "ci", "name": "extra"}],
          "imagePullSecrets": [{"name": "registry"}],
          "automountServiceAccountToken": false
        }"#,
    );
}

#[test]
fn lease_with_micro_times_and_zero_pointers() {
    round_trip(
        "coordination.k8s.io",
        "v1",
        "Lease",
        r#"{
          "kind": "Lease",
          "apiVersion": "coordination.k8s.io/v1",
          "metadata": {"name": "kube-scheduler", "namespace": "kube-system", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "spec": {
            "holderIdentity": "node-1_5c1f",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-01-02T03:04:05.123456Z",
            "renewTime": "2024-01-02T03:05:00.000001Z",
            "leaseTransitions": 0
          }
        }"#,
    );
}

#[test]
fn event_with_involved_object_series_and_times() {
    round_trip(
        "",
        "v1",
        "Event",
        r#"{
          "kind": "Event",
          "apiVersion": "v1",
          "metadata": {"name": "web-7d4b9.17a3c", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web-7d4b9",
            "uid": "abcd",
            "apiVersion": "v1",
            "resourceVersion": "812",
            "fieldPath": "spec.containers{nginx}"
          },
          "reason": "BackOff",
          "message": "Back-off restarting failed container",
          "source": {"component": "kubelet", "host": "node-1"},
          "firstTimestamp": "2024-01-02T03:04:05Z",
          "lastTimestamp": "2024-01-02T03:09:05Z",
          "count": 12,
          "type": "Warning",
          "eventTime": "2024-01-02T03:04:05.654321Z",
          "series": {"count": 11, "lastObservedTime": "2024-01-02T03:09:05.000100Z"},
          "action": "Restarting",
          "related": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
          "reportingComponent": "kubelet",
          "reportingInstance": "node-1"
        }"#,
    );
}

#[test]
fn event_as_kube_apiserver_serves_an_old_style_event() {
    // Old-style events have a zero eventTime (null) and empty reporting fields, which
    // kube-apiserver still writes because their json tags have no omitempty.
    round_trip(
        "",
        "v1",
        "Event",
        r#"{
          "kind": "Event",
          "apiVersion": "v1",
          "metadata": {"name": "e1", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "involvedObject": {"kind": "Node", "name": "node-1", "uid": "node-1"},
          "reason": "Starting",
          "message": "Starting kubelet.",
          "source": {"component": "kubelet", "host": "node-1"},
          "firstTimestamp": "2024-01-02T03:04:05Z",
          "lastTimestamp": "2024-01-02T03:04:05Z",
          "count": 1,
          "type": "Normal",
          "eventTime": null,
          "reportingComponent": "",
          "reportingInstance": ""
        }"#,
    );
}

#[test]
fn deployment_with_a_full_pod_template() {
    round_trip(
        "apps",
        "v1",
        "Deployment",
        r#"{
          "kind": "Deployment",
          "apiVersion": "apps/v1",
          "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "5f3c0f9e-aaaa-bbbb-cccc-ddddeeeeffff",
            "resourceVersion": "1234",
            "generation": 3,
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "web"},
            "annotations": {"deployment.kubernetes.io/revision": "2"}
          },
          "spec": {
            "replicas": 3,
            "selector": {
              "matchLabels": {"app": "web"},
              "matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend", "backend"]}]
            },
            "template": {
              "metadata": {"creationTimestamp": null, "labels": {"app": "web", "tier": "frontend"}},
              "spec": {
                "volumes": [
                  {"name": "config", "configMap": {"name": "web-config", "items": [{"key": "app.conf", "path": "app.conf", "mode": 420}], "defaultMode": 420}},
                  {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                  {"name": "creds", "secret": {"secretName": "web-creds", "defaultMode": 256, "optional": false}},
                  {
                    "name": "token",
                    "projected": {
                      "sources": [
                        {"serviceAccountToken": {"audience": "api", "expirationSeconds": 3600, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                      ],
                      "defaultMode": 420
                    }
                  }
                ],
                "initContainers": [
                  {"name": "init", "image": "busybox:1.36", "command": ["sh", "-c", "echo init"], "resources": {}}
                ],
                "containers": [
                  {
                    "name": "nginx",
                    "image": "nginx:1.25",
                    "args": ["-g", "daemon off;"],
                    "workingDir": "/usr/share/nginx",
                    "ports": [
                      {"name": "http", "containerPort": 80, "protocol": "TCP"},
                      {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}
                    ],
                    "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "web-env"}}],
                    "env": [
                      {"name": "MODE", "value": "production"},
                      {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                      {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "web-creds", "key": "password", "optional": false}}},
                      {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"containerName": "nginx", "resource": "limits.cpu", "divisor": "1m"}}}
                    ],
                    "resources": {
                      "limits": {"cpu": "500m", "memory": "256Mi"},
                      "requests": {"cpu": "100m", "ephemeral-storage": "1Gi", "memory": "128Mi"}
                    },
                    "volumeMounts": [
                      {"name": "config", "readOnly": true, "mountPath": "/etc/nginx/conf.d"},
                      {"name": "scratch", "mountPath": "/tmp"}
                    ],
                    "livenessProbe": {
                      "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP", "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                      "initialDelaySeconds": 5,
                      "timeoutSeconds": 1,
                      "periodSeconds": 10,
                      "successThreshold": 1,
                      "failureThreshold": 3
                    },
                    "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 5},
                    "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "failureThreshold": 30, "terminationGracePeriodSeconds": 0},
                    "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                    "securityContext": {
                      "capabilities": {"drop": ["ALL"]},
                      "privileged": false,
                      "runAsUser": 0,
                      "runAsNonRoot": false,
                      "readOnlyRootFilesystem": true,
                      "allowPrivilegeEscalation": false,
                      "seccompProfile": {"type": "RuntimeDefault"}
                    }
                  }
                ],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "serviceAccountName": "web",
                "serviceAccount": "web",
                "automountServiceAccountToken": false,
                "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
                "imagePullSecrets": [{"name": "registry"}],
                "affinity": {
                  "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                      {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}
                    ]
                  }
                },
                "schedulerName": "default-scheduler",
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "topologySpreadConstraints": [
                  {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}
                ]
              }
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
            "minReadySeconds": 5,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
          },
          "status": {
            "observedGeneration": 3,
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "conditions": [
              {
                "type": "Available",
                "status": "True",
                "lastUpdateTime": "2024-01-02T03:04:05Z",
                "lastTransitionTime": "2024-01-02T03:04:05Z",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability."
              }
            ]
          }
        }"#,
    );
}

#[test]
fn replica_set() {
    round_trip(
        "apps",
        "v1",
        "ReplicaSet",
        r#"{
          "kind": "ReplicaSet",
          "apiVersion": "apps/v1",
          "metadata": {"name": "web-7d4b9", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7d4b9"}},
            "template": {
              "metadata": {"creationTimestamp": null, "labels": {"app": "web", "pod-template-hash": "7d4b9"}},
              "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}
            }
          },
          "status": {"replicas": 0, "observedGeneration": 2}
        }"#,
    );
}

#[test]
fn pod_with_status() {
    round_trip(
        "",
        "v1",
        "Pod",
        r#"{
          "kind": "Pod",
          "apiVersion": "v1",
          "metadata": {"name": "web-7d4b9-x2x", "generateName": "web-7d4b9-", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "spec": {
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            "containers": [{"name": "app", "image": "app:1", "resources": {}, "stdin": true, "tty": true}],
            "nodeName": "node-1",
            "hostNetwork": true,
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"
          },
          "status": {
            "phase": "Pending",
            "conditions": [
              {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:06Z"}
            ],
            "hostIP": "10.0.0.5",
            "hostIPs": [{"ip": "10.0.0.5"}],
            "podIP": "10.244.1.7",
            "podIPs": [{"ip": "10.244.1.7"}],
            "startTime": "2024-01-02T03:04:06Z",
            "containerStatuses": [
              {
                "name": "app",
                "state": {"waiting": {"reason": "ContainerCreating"}},
                "lastState": {},
                "ready": false,
                "restartCount": 0,
                "image": "app:1",
                "imageID": "",
                "started": false
              }
            ],
            "qosClass": "BestEffort"
          }
        }"#,
    );
}

#[test]
fn service_endpoints_and_node() {
    round_trip(
        "",
        "v1",
        "Service",
        r#"{
          "kind": "Service",
          "apiVersion": "v1",
          "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "spec": {
            "ports": [
              {"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"},
              {"name": "metrics", "protocol": "TCP", "appProtocol": "http", "port": 9090, "targetPort": 9090, "nodePort": 30090}
            ],
            "selector": {"app": "web"},
            "clusterIP": "10.96.0.17",
            "clusterIPs": ["10.96.0.17"],
            "type": "NodePort",
            "sessionAffinity": "None",
            "externalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster"
          },
          "status": {"loadBalancer": {}}
        }"#,
    );
    round_trip(
        "",
        "v1",
        "Endpoints",
        r#"{
          "kind": "Endpoints",
          "apiVersion": "v1",
          "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"},
          "subsets": [
            {
              "addresses": [{"ip": "10.244.1.7", "nodeName": "node-1", "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u1"}}],
              "notReadyAddresses": [{"ip": "10.244.2.9", "hostname": "web-2"}],
              "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
            }
          ]
        }"#,
    );
    round_trip(
        "",
        "v1",
        "Node",
        r#"{
          "kind": "Node",
          "apiVersion": "v1",
          "metadata": {"name": "node-1", "creationTimestamp": "2024-01-02T03:04:05Z", "labels": {"kubernetes.io/hostname": "node-1"}},
          "spec": {
            "podCIDR": "10.244.1.0/24",
            "podCIDRs": ["10.244.1.0/24"],
            "providerID": "kind://docker/kind/node-1",
            "taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2024-01-02T03:04:05Z"}]
          },
          "status": {
            "capacity": {"cpu": "8", "memory": "16318412Ki", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "16318412Ki", "pods": "110"},
            "conditions": [
              {
                "type": "Ready",
                "status": "True",
                "lastHeartbeatTime": "2024-01-02T03:04:05Z",
                "lastTransitionTime": "2024-01-02T03:00:00Z",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status"
              }
            ],
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "node-1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
              "machineID": "m",
              "systemUUID": "s",
              "bootID": "b",
              "kernelVersion": "6.1.0",
              "osImage": "Debian GNU/Linux 12 (bookworm)",
              "containerRuntimeVersion": "containerd://1.7.13",
              "kubeletVersion": "v1.32.0",
              "kubeProxyVersion": "",
              "operatingSystem": "linux",
              "architecture": "amd64"
            },
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
            "runtimeHandlers": [{"name": "", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": true}}]
          }
        }"#,
    );
}

#[test]
fn lists_serve_items_without_type_meta() {
    round_trip(
        "",
        "v1",
        "ConfigMapList",
        r#"{
          "kind": "ConfigMapList",
          "apiVersion": "v1",
          "metadata": {"resourceVersion": "77", "continue": "eyJ2IjoxfQ", "remainingItemCount": 0},
          "items": [
            {"metadata": {"name": "a", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"}, "data": {"k": "v"}},
            {"metadata": {"name": "b", "namespace": "default", "creationTimestamp": "2024-01-02T03:04:05Z"}}
          ]
        }"#,
    );
    round_trip("", "v1", "SecretList", r#"{"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": []}"#);
}

#[test]
fn status_object() {
    round_trip(
        "",
        "v1",
        "Status",
        r#"{
          "kind": "Status",
          "apiVersion": "v1",
          "metadata": {},
          "status": "Failure",
          "message": "configmaps \"x\" already exists",
          "reason": "AlreadyExists",
          "details": {"name": "x", "kind": "configmaps", "causes": [{"reason": "FieldValueDuplicate", "message": "dup", "field": "metadata.name"}], "retryAfterSeconds": 1},
          "code": 409
        }"#,
    );
}

#[test]
fn self_subject_access_review_with_resource_attributes() {
    // What kube-apiserver answers to `kubectl auth can-i list deployments.apps/scale -n default`
    // with selectors: metadata as the client sent it, `allowed` written even when false.
    round_trip(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        r#"{
          "kind": "SelfSubjectAccessReview",
          "apiVersion": "authorization.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {
            "resourceAttributes": {
              "namespace": "default",
              "verb": "list",
              "group": "apps",
              "version": "v1",
              "resource": "deployments",
              "subresource": "scale",
              "name": "web",
              "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["node-1"]}]},
              "labelSelector": {
                "rawSelector": "app=web",
                "requirements": [{"key": "tier", "operator": "Exists"}]
              }
            }
          },
          "status": {"allowed": false, "reason": "no RBAC policy matched"}
        }"#,
    );
    round_trip(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        r#"{
          "kind": "SelfSubjectAccessReview",
          "apiVersion": "authorization.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
          "status": {"allowed": true}
        }"#,
    );
}

#[test]
fn subject_access_review_with_extra() {
    // Extra values are plain string arrays in JSON (ExtraValue is a message on the wire), map
    // keys sorted; an empty one stays `[]`. Status: Go order (denied before reason).
    round_trip(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        r#"{
          "kind": "SubjectAccessReview",
          "apiVersion": "authorization.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {
            "resourceAttributes": {"namespace": "prod", "verb": "delete", "resource": "secrets", "name": "db"},
            "user": "alice",
            "groups": ["devs", "system:authenticated"],
            "extra": {
              "authentication.kubernetes.io/credential-id": ["X509SHA256=0a1b"],
              "none": [],
              "scopes": ["read", "write"]
            },
            "uid": "5e2c7b9a-0000-4000-8000-000000000001"
          },
          "status": {
            "allowed": false,
            "denied": true,
            "reason": "denied by policy",
            "evaluationError": "webhook timed out"
          }
        }"#,
    );
    round_trip(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        r#"{
          "kind": "LocalSubjectAccessReview",
          "apiVersion": "authorization.k8s.io/v1",
          "metadata": {"namespace": "prod", "creationTimestamp": null},
          "spec": {"resourceAttributes": {"namespace": "prod", "verb": "get", "resource": "pods"}, "user": "bob"},
          "status": {"allowed": true}
        }"#,
    );
}

#[test]
fn self_subject_rules_review_with_status_rules() {
    round_trip(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        r#"{
          "kind": "SelfSubjectRulesReview",
          "apiVersion": "authorization.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {"namespace": "default"},
          "status": {
            "resourceRules": [
              {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
              {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"], "resourceNames": ["web-0"]}
            ],
            "nonResourceRules": [
              {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}
            ],
            "incomplete": false
          }
        }"#,
    );
    // Slices without omitempty: nil is `null`, which is what a protobuf status with no rules
    // decodes to in Go; `incomplete` is always written.
    round_trip(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        r#"{
          "kind": "SelfSubjectRulesReview",
          "apiVersion": "authorization.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {},
          "status": {
            "resourceRules": [{"verbs": null, "resources": ["*"]}],
            "nonResourceRules": null,
            "incomplete": true,
            "evaluationError": "no rules resolver for this authorizer"
          }
        }"#,
    );
}

#[test]
fn cluster_role_with_an_aggregation_rule() {
    // As created: the aggregation controller has not filled in the rules yet, and `rules` has
    // no omitempty, so kube-apiserver serves `"rules": null`.
    round_trip(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        r#"{
          "kind": "ClusterRole",
          "apiVersion": "rbac.authorization.k8s.io/v1",
          "metadata": {
            "name": "monitoring",
            "uid": "3c0e3a52-1111-4222-8333-444455556666",
            "resourceVersion": "812",
            "creationTimestamp": "2024-03-04T05:06:07Z",
            "labels": {"app.kubernetes.io/part-of": "monitoring"}
          },
          "rules": null,
          "aggregationRule": {
            "clusterRoleSelectors": [
              {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}},
              {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["ops", "sre"]}]}
            ]
          }
        }"#,
    );
    round_trip(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        r#"{
          "kind": "ClusterRole",
          "apiVersion": "rbac.authorization.k8s.io/v1",
          "metadata": {
            "name": "view",
            "creationTimestamp": "2024-03-04T05:06:07Z",
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}
          },
          "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments"]},
            {"verbs": ["get"], "nonResourceURLs": ["/metrics"]}
          ],
          "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
        }"#,
    );
}

#[test]
fn role_binding_with_subjects() {
    round_trip(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        r#"{
          "kind": "RoleBinding",
          "apiVersion": "rbac.authorization.k8s.io/v1",
          "metadata": {
            "name": "read-pods",
            "namespace": "default",
            "uid": "9f1d2c3b-aaaa-4bbb-8ccc-dddddddddddd",
            "resourceVersion": "1024",
            "creationTimestamp": "2024-03-04T05:06:07Z"
          },
          "subjects": [
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:serviceaccounts:ci"}
          ],
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}
        }"#,
    );
    // roleRef's fields and a subject's kind and name have no omitempty.
    round_trip(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        r#"{
          "kind": "ClusterRoleBinding",
          "apiVersion": "rbac.authorization.k8s.io/v1",
          "metadata": {"name": "nobody", "creationTimestamp": null},
          "subjects": [{"kind": "", "name": ""}],
          "roleRef": {"apiGroup": "", "kind": "", "name": ""}
        }"#,
    );
}

#[test]
fn rbac_roles_and_lists() {
    round_trip(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        r#"{
          "kind": "Role",
          "apiVersion": "rbac.authorization.k8s.io/v1",
          "metadata": {"name": "pod-reader", "namespace": "default", "creationTimestamp": "2024-03-04T05:06:07Z"},
          "rules": [{"verbs": ["get", "watch", "list"], "apiGroups": [""], "resources": ["pods"]}]
        }"#,
    );
    round_trip(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleList",
        r#"{
          "kind": "RoleList",
          "apiVersion": "rbac.authorization.k8s.io/v1",
          "metadata": {"resourceVersion": "3000"},
          "items": [{"metadata": {"name": "empty", "namespace": "default", "creationTimestamp": null}, "rules": null}]
        }"#,
    );
    for kind in ["ClusterRoleList", "ClusterRoleBindingList", "RoleBindingList"] {
        round_trip(
            "rbac.authorization.k8s.io",
            "v1",
            kind,
            &format!(
                r#"{{"kind": "{kind}", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {{"resourceVersion": "1"}}, "items": []}}"#
            ),
        );
    }
}

#[test]
fn token_review_status_with_user_info() {
    round_trip(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        r#"{
          "kind": "TokenReview",
          "apiVersion": "authentication.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {"token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "audiences": ["https://kubernetes.default.svc.cluster.local"]},
          "status": {
            "authenticated": true,
            "user": {
              "username": "system:serviceaccount:default:builder",
              "uid": "0f6c2a9e-1234-4abc-9def-00112233aabb",
              "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
              "extra": {
                "authentication.kubernetes.io/credential-id": ["JTI=7d9c0e1f-2a3b-4c5d-8e6f-708192a3b4c5"],
                "authentication.kubernetes.io/pod-name": ["web-0"],
                "authentication.kubernetes.io/pod-uid": ["a1b2c3d4-0000-4000-8000-000000000002"]
              }
            },
            "audiences": ["https://kubernetes.default.svc.cluster.local"]
          }
        }"#,
    );
    // A rejected token: `user` is a value struct, which encoding/json writes even when empty.
    round_trip(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        r#"{
          "kind": "TokenReview",
          "apiVersion": "authentication.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {"token": "not-a-token"},
          "status": {"user": {}, "error": "invalid bearer token"}
        }"#,
    );
}

#[test]
fn self_subject_review_and_token_request() {
    round_trip(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        r#"{
          "kind": "SelfSubjectReview",
          "apiVersion": "authentication.k8s.io/v1",
          "metadata": {"creationTimestamp": "2024-03-04T05:06:07Z"},
          "status": {"userInfo": {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}}
        }"#,
    );
    // `kubectl create token builder`'s body: the pointers and the slice in the spec have no
    // omitempty, so unset they are `null`; the status's token and time are always written.
    round_trip(
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        r#"{
          "kind": "TokenRequest",
          "apiVersion": "authentication.k8s.io/v1",
          "metadata": {"creationTimestamp": null},
          "spec": {"audiences": null, "expirationSeconds": null, "boundObjectRef": null},
          "status": {"token": "", "expirationTimestamp": null}
        }"#,
    );
    // The answer to `kubectl create token builder --bound-object-kind Pod ...`: BoundObjectReference's
    // `uID` is `uid` in JSON; expirationSeconds is written even when 0.
    round_trip(
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        r#"{
          "kind": "TokenRequest",
          "apiVersion": "authentication.k8s.io/v1",
          "metadata": {"name": "builder", "namespace": "default", "creationTimestamp": "2024-03-04T05:06:07Z"},
          "spec": {
            "audiences": ["https://kubernetes.default.svc.cluster.local"],
            "expirationSeconds": 0,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0", "uid": "a1b2c3d4-0000-4000-8000-000000000002"}
          },
          "status": {"token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "expirationTimestamp": "2024-03-04T06:06:07Z"}
        }"#,
    );
}
