//! Paginated LIST (spec §7; checklist §11.13). The unfiltered pass lists the whole namespace,
//! since kube only counts `remainingItemCount` for lists without selectors; other checks'
//! objects may be in it, which changes nothing, because a paginated list is one snapshot.
//!
//! Every page's items are checked for the type metadata kube gives them: none for a built-in
//! kind (typed list items have no `kind` or `apiVersion`), the object's own for a custom
//! resource (an UnstructuredList's items are the stored objects whole).

use serde_json::Value;

use crate::fixture::{Fixture, encode};
use crate::resource::Resource;
use crate::{CheckFailure, Target};

const LIMIT: usize = 2;
/// Stops a server whose tokens never run out.
const MAX_PAGES: usize = 2000;

struct Page {
    response: String,
    names: Vec<String>,
    resource_version: String,
    continue_token: String,
    remaining: Option<i64>,
    has_remaining_field: bool,
}

/// Lists `query` page by page with `limit=2`.
async fn pages(fx: &Fixture<'_>, query: &str) -> Result<Vec<Page>, CheckFailure> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let mut page_query = format!("limit={LIMIT}");
        if !query.is_empty() {
            page_query = format!("{query}&{page_query}");
        }
        if !token.is_empty() {
            page_query.push_str(&format!("&continue={}", encode(&token)));
        }
        let response = fx.target.get(&fx.collection(&page_query)).await?;
        let list: Value = response.expect(200)?;
        if let Some(problem) = type_meta_problem(fx.target.resource, &list) {
            return Err(CheckFailure::failed_with(format!("GET {}: {problem}", response.path), response.describe()));
        }
        let metadata = &list["metadata"];
        let page = Page {
            response: response.describe(),
            names: list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_string())
                .collect(),
            resource_version: metadata["resourceVersion"].as_str().unwrap_or_default().to_string(),
            continue_token: metadata["continue"].as_str().unwrap_or_default().to_string(),
            remaining: metadata["remainingItemCount"].as_i64(),
            has_remaining_field: metadata.get("remainingItemCount").is_some(),
        };
        token = page.continue_token.clone();
        pages.push(page);
        if token.is_empty() {
            return Ok(pages);
        }
        if pages.len() >= MAX_PAGES {
            return Err(CheckFailure::failed(format!(
                "more than {MAX_PAGES} pages of {LIMIT}: the continue tokens never end"
            )));
        }
    }
}

/// What is wrong with the `kind` and `apiVersion` of a list's items (None when right).
fn type_meta_problem(resource: Resource, list: &Value) -> Option<String> {
    let (kind, api_version) = if resource.is_custom() {
        (Value::from(resource.kind()), Value::from(resource.api_version()))
    } else {
        (Value::Null, Value::Null)
    };
    let item = list["items"].as_array()?.iter().find(|i| i["kind"] != kind || i["apiVersion"] != api_version)?;
    Some(if resource.is_custom() {
        format!(
            "a custom resource's list items are the objects whole, with kind {kind} and apiVersion {api_version}; item {} has {} and {}",
            item["metadata"]["name"], item["kind"], item["apiVersion"]
        )
    } else {
        format!(
            "a built-in kind's list items carry no kind or apiVersion; item {} has {} and {}",
            item["metadata"]["name"], item["kind"], item["apiVersion"]
        )
    })
}

/// Shared page invariants: one resourceVersion, at most `limit` items a page, names in
/// strictly increasing (key) order across pages, and `ours` all present.
fn check_pages(what: &str, pages: &[Page], ours: &[String]) -> Result<Vec<String>, CheckFailure> {
    let first_rv = &pages[0].resource_version;
    let mut names: Vec<String> = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let fail = |why: String| CheckFailure::failed_with(format!("{what}, page {i}: {why}"), page.response.clone());
        if page.resource_version.is_empty() || &page.resource_version != first_rv {
            return Err(fail(format!(
                "every page must have the first page's metadata.resourceVersion {first_rv:?}, this one has {:?}",
                page.resource_version
            )));
        }
        if page.names.len() > LIMIT {
            return Err(fail(format!("a page holds {} items, more than limit={LIMIT}", page.names.len())));
        }
        for name in &page.names {
            if let Some(previous) = names.last()
                && name.as_bytes() <= previous.as_bytes()
            {
                return Err(fail(format!("items must come in key order; {name:?} follows {previous:?}")));
            }
            names.push(name.clone());
        }
    }
    let missing: Vec<&String> = ours.iter().filter(|n| !names.contains(n)).collect();
    if !missing.is_empty() {
        return Err(CheckFailure::failed(format!(
            "{what}: the pages miss objects that existed before the list: {missing:?}"
        )));
    }
    Ok(names)
}

/// §11.13 / §7.1: pages share one resourceVersion and come in key order; while `continue` is
/// set, `remainingItemCount + len(items) + seen == total`; on the last page (no `continue`)
/// `remainingItemCount` is omitted; a filtered list never carries it.
pub async fn pagination(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "list-pagination");
    let mut ours = Vec::new();
    // Created out of order, so key order is the server's doing.
    for i in [3, 0, 6, 1, 5, 2, 4] {
        let object = fx.create(&format!("p{i:02}"), "1").await?;
        ours.push(object["metadata"]["name"].as_str().unwrap_or_default().to_string());
    }

    let unfiltered = pages(&fx, "").await?;
    let names = check_pages("unfiltered list", &unfiltered, &ours)?;
    let total = names.len() as i64;
    let mut seen = 0;
    let last = unfiltered.len() - 1;
    for (i, page) in unfiltered.iter().enumerate() {
        let fail =
            |why: String| CheckFailure::failed_with(format!("unfiltered list, page {i}: {why}"), page.response.clone());
        let count = page.names.len() as i64;
        if i < last {
            match page.remaining {
                Some(remaining) if remaining + count + seen == total => {}
                Some(remaining) => {
                    return Err(fail(format!(
                        "remainingItemCount {remaining} + {count} items + {seen} seen must be the {total} items in all"
                    )));
                }
                None => {
                    return Err(fail(
                        "a page with a continue token must carry remainingItemCount (no selectors)".into(),
                    ));
                }
            }
        } else if page.has_remaining_field {
            return Err(fail("the last page (no continue token) must omit remainingItemCount".into()));
        }
        seen += count;
    }

    let selector = format!("labelSelector={}", encode(&fx.selector()));
    let filtered = pages(&fx, &selector).await?;
    let mut sorted = ours.clone();
    sorted.sort();
    let names = check_pages("list with a label selector", &filtered, &ours)?;
    if names != sorted {
        return Err(CheckFailure::failed(format!(
            "a list selecting this check's objects must give exactly {sorted:?}, got {names:?}"
        )));
    }
    if let Some((i, page)) = filtered.iter().enumerate().find(|(_, p)| p.has_remaining_field) {
        return Err(CheckFailure::failed_with(
            format!("list with a label selector, page {i}: a filtered list must omit remainingItemCount"),
            page.response.clone(),
        ));
    }
    if filtered.len() < 2 {
        return Err(CheckFailure::failed_with(
            format!("7 objects with limit={LIMIT} must take several pages"),
            filtered[0].response.clone(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn list_items_carry_type_meta_only_for_a_custom_resource() {
        let bare = json!({"items": [{"metadata": {"name": "a"}}]});
        let typed = json!({"items": [{"kind": "ConformanceBlob", "apiVersion": "conformance.listwatch.dev/v1", "metadata": {"name": "a"}}]});
        assert_eq!(type_meta_problem(Resource::ConfigMaps, &bare), None);
        assert!(type_meta_problem(Resource::ConfigMaps, &typed).is_some());
        assert_eq!(type_meta_problem(Resource::Custom, &typed), None);
        assert!(type_meta_problem(Resource::Custom, &bare).is_some());
    }
}
