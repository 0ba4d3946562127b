# A list-then-watch loop with the official Python client, as the docs of Watch.stream
# recommend: watch with timeout_seconds, re-watch from the last resourceVersion after each
# stream, re-list on ApiException 410 (and, after any other error, a second later). Unchanged
# from kubernetes 12.0.1 to 36.x.
#
# Before 17.17.0 (python-base#227) a 410 in the stream ends Watch.stream silently when
# timeout_seconds is set: this loop then asks the expired resourceVersion again and again.
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
api = client.CoreV1Api()
namespace = sys.argv[1] if len(sys.argv) > 1 else "default"


def relist():
    listed = api.list_namespaced_config_map(namespace)
    return listed.metadata.resource_version


rv = None
while True:
    try:
        if rv is None:
            rv = relist()
        for event in watch.Watch().stream(api.list_namespaced_config_map, namespace,
                                          resource_version=rv, timeout_seconds=5):
            rv = event["object"].metadata.resource_version
        # The stream ended: its timeout (or, before 17.17.0, a swallowed 410).
    except ApiException as e:
        if e.status != 410:
            time.sleep(1)
        rv = None
    except Exception:
        time.sleep(1)
