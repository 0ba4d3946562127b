//! PATCH of an object or its status: JSON merge patch, JSON patch, or strategic merge patch
//! (the scale subresource's patch is in [`super::scale`], server-side apply in
//! [`super::apply`]).

use listwatch_gocompat::json as go_json;
use listwatch_meta::ApiError;
use serde_json::Value;

use super::field_manager::{self, Ownership, update_manager};
use super::patch_kind::PatchKind;
use super::write::{WriteRequest, respond, update_to};
use super::{apply, kinds, scale, schema};
use crate::admission::{Admission, Operation};
use crate::authz::escalation::Guard;
use crate::options::{OptionsKind, write_options};
use crate::response::{self, HttpResponse};

/// PATCH: JSON merge patch, JSON patch, strategic merge patch, or server-side apply.
pub async fn patch(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let kind = PatchKind::from_headers(w.headers)?;
    if kind == PatchKind::Apply {
        return apply::apply(w).await;
    }
    let (dry_run, validation) = write_options(w.query, OptionsKind::Patch)?;
    let WriteRequest { state, user, store, req, query, headers, body, media } = w;
    let guard = Guard::for_write(state, user, store.resource).await;
    let patch = kind.decode(&body, validation)?;
    let manager = update_manager(query, headers);
    if req.subresource.as_deref() == Some("scale") {
        return scale::patch(state, store, req, kind, &patch, dry_run, &manager).await;
    }
    let resource = store.resource;
    let mut warnings = Vec::new();
    let namespace = store.scope(req.namespace.as_deref());
    let subresource = req.subresource.as_deref();
    let admission =
        Admission::new(state, user, resource, subresource, namespace, Operation::Update, dry_run, Some(&manager));
    let ownership = Ownership::Update(&manager);
    let updated = update_to(store, req, dry_run, false, ownership, guard.as_ref(), &admission, |existing| {
        let current = existing.value();
        let patched = kind.apply(resource, &current, &patch)?;
        let Value::Object(map) = patched else {
            return Err(kind.undecodable(
                &patched,
                &patch,
                &format!(
                    "json: cannot unmarshal {} into Go value of type {}",
                    go_json::json_kind(&patched),
                    resource.kind
                ),
            ));
        };
        let shown = || kind.shown(&map, &patch);
        // The patched JSON is decoded as a body is: another kind fails, in the decoder's words,
        // as kube's 422 on `patch`. A strategic merge patch's result is converted by Go type
        // instead, so the apiVersion and kind it names are ignored.
        let strategic = kind == PatchKind::Strategic;
        if !strategic {
            let named = kinds::interpret(&Value::Object(map.clone()))
                .map(|named| named.with_defaults(resource))
                .and_then(|named| kinds::decode_failure(&named, resource, &shown(), &map));
            if let Err(detail) = named {
                return Err(schema::patch_invalid(&shown(), &detail));
            }
        }
        let source = schema::Source::Patch { shown: &shown, strategic };
        let (mut decoded, found) = schema::decode(resource, map.clone(), source, validation)?;
        if field_manager::asks_reset(&map) {
            field_manager::carry_reset(&mut decoded);
        }
        warnings = found;
        Ok(decoded)
    })
    .await?;
    warnings.extend(admission.warnings());
    Ok(response::with_warnings(respond(store, media, 200, updated.object()), &warnings))
}
