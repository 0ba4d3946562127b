//! Names: what discovery lists for a CRD, and the two controllers that decide when a CRD is
//! served (kube's `pkg/controller/status/naming_controller.go` and
//! `pkg/controller/establish/establishing_controller.go`).
//!
//! * [`accept_names`]: the naming controller. Requested names are compared with the *accepted*
//!   names of every CRD in the same group (the CRD itself included): plural, singular and
//!   short names against all resource names, kind and list kind against all kinds. A name
//!   equal to the CRD's own accepted one always passes. A conflict leaves that name
//!   unaccepted and makes `NamesAccepted` False with reason `PluralConflict`,
//!   `SingularConflict`, `ShortNamesConflict`, `KindConflict` or `ListKindConflict` and message
//!   `"<name>" is already in use` (the last conflict found wins, in that order). Otherwise it is
//!   True / `NoConflicts` / `no conflicts found`, and `Established` becomes False /
//!   `Installing` / `the initial names have been accepted` unless already True.
//! * [`establish`]: the establishing controller: `Established` True / `InitialNamesAccepted` /
//!   `the initial names have been accepted` once `NamesAccepted` is True.
//! * [`discovery`]: the `APIResourceList` entries (from the *accepted* names).
//!
//! kube compares only with other CRDs; built-in resources of the same group are not
//! consulted (CRDs in built-in groups need the `api-approved.kubernetes.io` annotation).

use serde_json::{Value, json};

use crate::crd::{CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames};

/// Verbs of a served custom resource, in kube's discovery order.
pub const VERBS: [&str; 8] = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];
/// Verbs while the CRD is terminating.
pub const TERMINATING_VERBS: [&str; 5] = ["delete", "deletecollection", "get", "list", "watch"];
/// Verbs of `/status` and `/scale`.
pub const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

/// Sets `condition` on `crd` as kube's `SetCRDCondition` does: the transition time moves
/// only when the status changes (or was never set). `now` is RFC 3339.
pub fn set_condition(crd: &mut CustomResourceDefinition, mut condition: CustomResourceDefinitionCondition, now: &str) {
    condition.last_transition_time = Some(now.to_owned());
    let conditions = crd.status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        None => conditions.push(condition),
        Some(existing) => {
            if existing.status != condition.status || existing.last_transition_time.is_none() {
                existing.last_transition_time = condition.last_transition_time;
            }
            existing.status = condition.status;
            existing.reason = condition.reason;
            existing.message = condition.message;
        }
    }
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> CustomResourceDefinitionCondition {
    CustomResourceDefinitionCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: None,
        reason: reason.into(),
        message: message.into(),
    }
}

/// Runs the naming controller on `crd` against `all` CRDs (any group; the CRD itself may be
/// among them). Returns whether anything changed (kube then writes the status).
pub fn accept_names(crd: &mut CustomResourceDefinition, all: &[&CustomResourceDefinition], now: &str) -> bool {
    if crd.spec.names == crd.status.accepted_names {
        return false;
    }
    let mut resources: Vec<&str> = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    for other in all.iter().filter(|o| o.spec.group == crd.spec.group) {
        let n = &other.status.accepted_names;
        resources.extend([n.plural.as_str(), n.singular.as_str()]);
        resources.extend(n.short_names.iter().map(String::as_str));
        kinds.extend([n.kind.as_str(), n.list_kind.as_str()]);
    }
    let fresh = |requested: &str, accepted: &str, used: &[&str]| -> Result<(), String> {
        if requested == accepted || !used.contains(&requested) {
            Ok(())
        } else {
            Err(format!("\"{requested}\" is already in use"))
        }
    };
    let requested = crd.spec.names.clone();
    let accepted = crd.status.accepted_names.clone();
    let mut names = accepted.clone();
    let mut conflict: Option<(&str, String)> = None;
    match fresh(&requested.plural, &accepted.plural, &resources) {
        Ok(()) => names.plural = requested.plural.clone(),
        Err(e) => conflict = Some(("PluralConflict", e)),
    }
    match fresh(&requested.singular, &accepted.singular, &resources) {
        Ok(()) => names.singular = requested.singular.clone(),
        Err(e) => conflict = Some(("SingularConflict", e)),
    }
    if requested.short_names != accepted.short_names {
        let problems: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| !accepted.short_names.contains(s))
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        match problems.len() {
            0 => names.short_names = requested.short_names.clone(),
            1 => conflict = Some(("ShortNamesConflict", problems[0].clone())),
            _ => conflict = Some(("ShortNamesConflict", format!("[{}]", problems.join(", ")))),
        }
    }
    match fresh(&requested.kind, &accepted.kind, &kinds) {
        Ok(()) => names.kind = requested.kind.clone(),
        Err(e) => conflict = Some(("KindConflict", e)),
    }
    match fresh(&requested.list_kind, &accepted.list_kind, &kinds) {
        Ok(()) => names.list_kind = requested.list_kind.clone(),
        Err(e) => conflict = Some(("ListKindConflict", e)),
    }
    names.categories = requested.categories.clone();
    let names_accepted = match &conflict {
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
    };
    let mut established = crd
        .condition("Established")
        .cloned()
        .unwrap_or_else(|| condition("Established", "False", "NotAccepted", "not all names are accepted"));
    if established.status != "True" && names_accepted.status == "True" {
        established = condition("Established", "False", "Installing", "the initial names have been accepted");
    }
    let unchanged = crd.status.accepted_names == names
        && crd.condition("NamesAccepted").is_some_and(|c| {
            c.status == names_accepted.status
                && c.reason == names_accepted.reason
                && c.message == names_accepted.message
        });
    if unchanged {
        return false;
    }
    crd.status.accepted_names = names;
    set_condition(crd, names_accepted, now);
    set_condition(crd, established, now);
    true
}

/// Runs the establishing controller: `Established` True once `NamesAccepted` is True.
/// Returns whether anything changed.
pub fn establish(crd: &mut CustomResourceDefinition, now: &str) -> bool {
    if !crd.is_condition_true("NamesAccepted") || crd.is_condition_true("Established") {
        return false;
    }
    set_condition(
        crd,
        condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        now,
    );
    true
}

/// Whether custom resource URLs answer: NamesAccepted or Established is True.
pub fn is_served(crd: &CustomResourceDefinition) -> bool {
    crd.is_condition_true("NamesAccepted") || crd.is_condition_true("Established")
}

/// The `APIResourceList` entries of `crd` for `version`: the resource, then `/status` and
/// `/scale` when enabled. Empty unless the CRD is Established and the version served.
pub fn discovery(crd: &CustomResourceDefinition, version: &str) -> Vec<Value> {
    let Some(v) = crd.version(version).filter(|v| v.served) else { return Vec::new() };
    if !crd.is_condition_true("Established") {
        return Vec::new();
    }
    let names: &CustomResourceDefinitionNames = &crd.status.accepted_names;
    let terminating = crd.is_condition_true("Terminating");
    let verbs: &[&str] = if terminating { &TERMINATING_VERBS } else { &VERBS };
    let mut resource = json!({
        "name": names.plural,
        "singularName": names.singular,
        "namespaced": crd.is_namespaced(),
        "kind": names.kind,
        "verbs": verbs,
    });
    if !names.short_names.is_empty() {
        resource["shortNames"] = json!(names.short_names);
    }
    if !names.categories.is_empty() {
        resource["categories"] = json!(names.categories);
    }
    let mut out = vec![resource];
    if v.has_status_subresource() {
        out.push(
            json!({"name": format!("{}/status", names.plural), "singularName": "", "namespaced": crd.is_namespaced(),
            "kind": names.kind, "verbs": SUBRESOURCE_VERBS}),
        );
    }
    if v.scale().is_some() {
        out.push(
            json!({"name": format!("{}/scale", names.plural), "singularName": "", "namespaced": crd.is_namespaced(),
            "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": SUBRESOURCE_VERBS}),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::set_defaults;
    use crate::strategy::prepare_for_create;

    fn crd(plural: &str, kind: &str, short: &[&str]) -> CustomResourceDefinition {
        let mut c =
            CustomResourceDefinition::from_value(&json!({"metadata": {"name": format!("{plural}.stable.example.com")},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": plural, "kind": kind, "shortNames": short},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}}))
            .unwrap();
        set_defaults(&mut c);
        prepare_for_create(&mut c);
        c
    }

    const NOW: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn accepts_then_establishes() {
        let mut c = crd("crontabs", "CronTab", &["ct"]);
        assert!(discovery(&c, "v1").is_empty());
        assert!(accept_names(&mut c, &[], NOW));
        let conds = c.status.conditions.clone().unwrap();
        assert_eq!(
            (conds[0].type_.as_str(), conds[0].status.as_str(), conds[0].reason.as_str(), conds[0].message.as_str()),
            ("NamesAccepted", "True", "NoConflicts", "no conflicts found")
        );
        assert_eq!(
            (conds[1].type_.as_str(), conds[1].status.as_str(), conds[1].reason.as_str()),
            ("Established", "False", "Installing")
        );
        assert_eq!(c.status.accepted_names, c.spec.names);
        assert!(is_served(&c));
        assert!(establish(&mut c, NOW));
        let established = c.condition("Established").unwrap();
        assert_eq!(
            (established.status.as_str(), established.reason.as_str(), established.message.as_str()),
            ("True", "InitialNamesAccepted", "the initial names have been accepted")
        );
        assert!(!accept_names(&mut c, &[], NOW));
        let entries = discovery(&c, "v1");
        assert_eq!(
            entries[0],
            json!({"name": "crontabs", "singularName": "crontab", "namespaced": true, "kind": "CronTab",
            "verbs": VERBS, "shortNames": ["ct"]})
        );
        assert_eq!(entries[1]["name"], "crontabs/status");
    }

    #[test]
    fn conflicts_leave_names_unaccepted() {
        let mut first = crd("crontabs", "CronTab", &["ct"]);
        accept_names(&mut first, &[], NOW);
        let mut second = crd("crontables", "CronTable", &["ct"]);
        accept_names(&mut second, &[&first], NOW);
        let c = second.condition("NamesAccepted").unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", "ShortNamesConflict", "\"ct\" is already in use")
        );
        assert!(second.status.accepted_names.short_names.is_empty());
        assert_eq!(second.status.accepted_names.plural, "crontables");
        let e = second.condition("Established").unwrap();
        assert_eq!((e.status.as_str(), e.reason.as_str()), ("False", "NotAccepted"));
        assert!(!establish(&mut second, NOW));

        let mut third = crd("crons", "CronTab", &[]);
        accept_names(&mut third, &[&first], NOW);
        assert_eq!(third.condition("NamesAccepted").unwrap().reason, "ListKindConflict");
    }
}
