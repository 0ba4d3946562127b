# A minimal kopf operator that reacts to every ConfigMap event of the namespaces it is given
# (python -m kopf run --standalone --namespace NS kopf_operator.py), logged in from
# $KUBECONFIG. The same code on 1.42.1 and 1.42.2.
#
# 1.42.1 (kopf #1229, fixed in 1.42.2): a 429 in plain text (as kube's in-flight and priority
# filters send it) kills the watcher for good while the operator keeps running.
import kopf


@kopf.on.login()
def login(**kwargs):
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.scanning.disabled = True
    settings.posting.enabled = False
    settings.watching.server_timeout = 60


@kopf.on.event("v1", "configmaps")
def on_event(**_):
    pass
