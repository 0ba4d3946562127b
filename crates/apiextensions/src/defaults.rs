//! What the server fills into a CRD before anything else looks at it (kube's
//! `SetDefaults_CustomResourceDefinition` in `pkg/apis/apiextensions/v1/defaults.go`):
//! `names.singular` from the kind, `names.listKind` as kind + `List`, `conversion` as
//! `{"strategy":"None"}`, a webhook Service's port 443, and `status.storedVersions` as the
//! storage version when empty.

use crate::crd::{CustomResourceConversion, CustomResourceDefinition};

/// Applies kube's defaults to `crd` in place.
pub fn set_defaults(crd: &mut CustomResourceDefinition) {
    let names = &mut crd.spec.names;
    if names.singular.is_empty() {
        names.singular = names.kind.to_lowercase();
    }
    if names.list_kind.is_empty() && !names.kind.is_empty() {
        names.list_kind = format!("{}List", names.kind);
    }
    let conversion =
        crd.spec.conversion.get_or_insert_with(|| CustomResourceConversion { strategy: "None".into(), webhook: None });
    if let Some(service) =
        conversion.webhook.as_mut().and_then(|w| w.client_config.as_mut()).and_then(|c| c.service.as_mut())
        && service.port.is_none()
    {
        service.port = Some(443);
    }
    if crd.status.stored_versions.as_ref().is_none_or(Vec::is_empty)
        && let Some(storage) = crd.spec.versions.iter().find(|v| v.storage)
    {
        crd.status.stored_versions = Some(vec![storage.name.clone()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_in_what_kube_fills_in() {
        let mut crd = CustomResourceDefinition::from_value(&json!({"spec": {"group": "stable.example.com",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "versions": [{"name": "v1beta1", "served": true}, {"name": "v1", "served": true, "storage": true}]}}))
        .unwrap();
        set_defaults(&mut crd);
        assert_eq!(crd.spec.names.singular, "crontab");
        assert_eq!(crd.spec.names.list_kind, "CronTabList");
        assert_eq!(crd.to_value()["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd.status.stored_versions, Some(vec!["v1".to_string()]));
    }

    #[test]
    fn keeps_what_is_set() {
        let mut crd = CustomResourceDefinition::from_value(&json!({"spec": {"names": {"plural": "xs", "kind": "X",
            "singular": "ex", "listKind": "Xs"}, "conversion": {"strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"namespace": "n", "name": "s"}}, "conversionReviewVersions": ["v1"]}}}}))
        .unwrap();
        set_defaults(&mut crd);
        assert_eq!((crd.spec.names.singular.as_str(), crd.spec.names.list_kind.as_str()), ("ex", "Xs"));
        let service = crd.spec.conversion.unwrap().webhook.unwrap().client_config.unwrap().service.unwrap();
        assert_eq!(service.port, Some(443));
    }
}
