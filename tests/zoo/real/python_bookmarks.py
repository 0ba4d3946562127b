# List, then one long-lived Watch.stream with bookmarks and no timeout_seconds: the library
# re-watches by itself after each stream end, from Watch.resource_version. Re-list on 410
# (and a second after any other error).
#
# From 17.17.0 to 35.0.0 (python#1729, fixed in 36.0.0) the stream drops the bookmarks'
# resourceVersions: a quiet watch resumes from before its last bookmark and gets 410.
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
api = client.CoreV1Api()
namespace = sys.argv[1] if len(sys.argv) > 1 else "default"

while True:
    try:
        listed = api.list_namespaced_config_map(namespace)
        stream = watch.Watch()
        for event in stream.stream(api.list_namespaced_config_map, namespace,
                                   resource_version=listed.metadata.resource_version, allow_watch_bookmarks=True):
            pass
    except ApiException as e:
        if e.status != 410:
            time.sleep(1)
    except Exception:
        time.sleep(1)
