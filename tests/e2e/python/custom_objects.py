"""The official Python client's CustomObjectsApi against listwatch, as a controller author's
script uses it: install a CRD (ApiextensionsV1Api), wait until it is Established, then create,
list, watch from the list's resourceVersion, patch (merge and server-side apply), read the
status subresource and delete custom objects. Prints one line per check; exits non-zero on the
first failure."""

import sys
import time

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
extensions = client.ApiextensionsV1Api()
custom = client.CustomObjectsApi()
group, version, plural, ns = "stable.example.com", "v1", "widgets", "default"

crd = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{plural}.{group}"},
    "spec": {
        "group": group,
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": plural, "singular": "widget", "listKind": "WidgetList"},
        "versions": [{
            "name": version, "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": 1},
                    "color": {"type": "string"},
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            }}},
        }],
    },
}
extensions.create_custom_resource_definition(crd)
deadline = time.time() + 10
while True:
    conditions = extensions.read_custom_resource_definition(f"{plural}.{group}").status.conditions or []
    if any(c.type == "Established" and c.status == "True" for c in conditions):
        break
    assert time.time() < deadline, conditions
    time.sleep(0.05)
print("established")

widget = {"apiVersion": f"{group}/{version}", "kind": "Widget", "metadata": {"name": "w1"},
          "spec": {"color": "red", "unknown": "pruned"}}
created = custom.create_namespaced_custom_object(group, version, ns, plural, widget)
assert created["spec"] == {"color": "red", "size": 1}, created["spec"]
print("created, defaulted and pruned")

listed = custom.list_namespaced_custom_object(group, version, ns, plural)
assert [item["metadata"]["name"] for item in listed["items"]] == ["w1"], listed
custom.patch_namespaced_custom_object(group, version, ns, plural, "w1", {"spec": {"color": "blue"}})
seen = []
for event in watch.Watch().stream(
    custom.list_namespaced_custom_object, group, version, ns, plural,
    resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=10,
):
    seen.append((event["type"], event["object"]["spec"].get("color")))
    if event["type"] == "MODIFIED":
        break
assert seen and seen[-1] == ("MODIFIED", "blue"), seen
print("watched MODIFIED")

custom.patch_namespaced_custom_object_status(group, version, ns, plural, "w1", {"status": {"ready": True}})
status = custom.get_namespaced_custom_object_status(group, version, ns, plural, "w1")
assert status["status"] == {"ready": True}, status
print("status written")

applied = client.ApiClient().call_api(
    f"/apis/{group}/{version}/namespaces/{ns}/{plural}/w2", "PATCH",
    query_params=[("fieldManager", "py-controller")],
    header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
    body={"apiVersion": f"{group}/{version}", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"size": 3}},
    response_type="object", auth_settings=["BearerToken"], _return_http_data_only=True,
)
managers = [(e["manager"], e["operation"]) for e in applied["metadata"]["managedFields"]]
assert applied["spec"]["size"] == 3 and ("py-controller", "Apply") in managers, applied
print("server-side applied")

custom.delete_namespaced_custom_object(group, version, ns, plural, "w1")
try:
    custom.get_namespaced_custom_object(group, version, ns, plural, "w1")
    raise AssertionError("a deleted Widget was found")
except client.exceptions.ApiException as e:
    assert e.status == 404, e.status
    print("deleted: 404")
print("ok")
