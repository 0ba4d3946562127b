# A kopf operator that serves admission webhooks for ConfigMaps and registers them itself
# (kopf's managed configurations), logged in from $KUBECONFIG:
#   python -m kopf run --standalone --namespace NS kopf_webhooks.py
# with WEBHOOK_PORT, WEBHOOK_CERT, WEBHOOK_KEY and WEBHOOK_CA naming where it listens (on
# 127.0.0.1) and the certificate, key and CA it serves and registers.
import os

import kopf


@kopf.on.login()
def login(**kwargs):
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.enabled = False
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1",
        host="127.0.0.1",
        port=int(os.environ["WEBHOOK_PORT"]),
        certfile=os.environ["WEBHOOK_CERT"],
        pkeyfile=os.environ["WEBHOOK_KEY"],
        cafile=os.environ["WEBHOOK_CA"],
    )
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("v1", "configmaps", id="forbid-passwords")
def forbid_passwords(body, **_):
    if "password" in (body.get("data") or {}):
        raise kopf.AdmissionError("no passwords in configmaps", code=422)


@kopf.on.mutate("v1", "configmaps", id="stamp", operation="CREATE")
def stamp(patch, **_):
    patch.metadata.setdefault("labels", {})["stamped-by"] = "kopf"
