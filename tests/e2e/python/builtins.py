"""The official Python client against listwatch: create, list, watch from the list's
resourceVersion, as a user's script does against kube-apiserver. Prints one line per check;
exits non-zero on the first failure."""

import sys

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
ns = "default"

core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-a"), data={"k": "1"}))
listed = core.list_namespaced_config_map(ns, label_selector="")
names = [cm.metadata.name for cm in listed.items]
assert "py-a" in names, names
print("listed", len(names), "at", listed.metadata.resource_version)

core.patch_namespaced_config_map("py-a", ns, {"data": {"k": "2"}})
seen = []
for event in watch.Watch().stream(
    core.list_namespaced_config_map, ns, resource_version=listed.metadata.resource_version, timeout_seconds=10
):
    seen.append((event["type"], event["object"].metadata.name, event["object"].data))
    if event["type"] == "MODIFIED":
        break
assert seen and seen[-1] == ("MODIFIED", "py-a", {"k": "2"}), seen
print("watched", seen[-1][0])

try:
    core.read_namespaced_config_map("nope", ns)
    raise AssertionError("a missing ConfigMap was found")
except client.exceptions.ApiException as e:
    assert e.status == 404 and e.reason == "Not Found", (e.status, e.reason)
    print("missing: 404")
print("ok")
