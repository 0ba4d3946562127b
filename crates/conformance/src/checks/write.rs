//! Optimistic concurrency on writes (spec §9.3; checklist §11.15).

use crate::fixture::{Fixture, rv};
use crate::http::Status;
use crate::{CheckFailure, Target};

/// §11.15 / §9.3: a PUT carrying a resourceVersion that is no longer current answers 409
/// Conflict with kube's exact message and details, and changes nothing.
pub async fn stale_update_conflicts(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "update-stale-resource-version");
    let x = fx.create("x", "1").await?;
    let x2 = fx.update(&x, "2").await?;
    let name = fx.name("x");

    let mut stale = x.clone();
    stale["data"] = serde_json::json!({"value": "stale"});
    let response = fx.put(&stale).await?;
    let status = Status::from_json(&response.expect(409)?);
    // kube names the group resource in the message, and its resource and group in the details.
    let resource = target.resource;
    let message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
        resource.qualified()
    );
    let group_matches = match resource.group() {
        "" => status.details.get("group").is_none_or(|g| g == ""),
        group => status.details["group"] == group,
    };
    if status.kind != "Status"
        || status.status != "Failure"
        || status.code != 409
        || status.reason != "Conflict"
        || status.message != message
        || status.details["name"] != name.as_str()
        || status.details["kind"] != resource.plural()
        || !group_matches
    {
        return Err(CheckFailure::failed_with(
            format!(
                "a stale PUT must answer a Status with code 409, reason Conflict, details {{name: {name}, group: {:?}, kind: {}}} and the message {message:?}",
                resource.group(),
                resource.plural()
            ),
            response.describe(),
        ));
    }

    let current = target.get(&format!("{}/{name}", target.collection())).await?;
    let object = current.expect(200)?;
    if rv(&object) != rv(&x2) || object["data"] != x2["data"] {
        return Err(CheckFailure::failed_with("a refused PUT must leave the object as it was", current.describe()));
    }
    Ok(())
}
