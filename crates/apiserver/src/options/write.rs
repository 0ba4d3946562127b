//! The options of a create, update or patch (`dryRun`, `fieldManager`, `fieldValidation`,
//! `force`), validated as kube validates them before it reads the object, and the kinds of
//! write options a 422 names.

use listwatch_meta::validation::{FieldError, invalid_error};
use listwatch_meta::{ApiError, write_validation};

use crate::request::Query;

/// `fieldValidation`: what a write does with fields the schema does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Strict,
    Warn,
    Ignore,
}

impl FieldValidation {
    /// The directive of `fieldValidation`; values kube does not know were refused with the
    /// other write options (see `write_validation::validate_field_validation`) and read as the
    /// default here.
    pub fn from_query(query: &Query) -> FieldValidation {
        match query.get("fieldValidation") {
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            _ => FieldValidation::Warn,
        }
    }
}

/// The write options kube validates (`ValidateCreateOptions`, `ValidateUpdateOptions`,
/// `ValidatePatchOptions`, `ValidateDeleteOptions`), named as kube names them in the 422.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsKind {
    Create,
    Update,
    Patch,
    Delete,
}

impl OptionsKind {
    fn kind(self) -> &'static str {
        match self {
            OptionsKind::Create => "CreateOptions",
            OptionsKind::Update => "UpdateOptions",
            OptionsKind::Patch => "PatchOptions",
            OptionsKind::Delete => "DeleteOptions",
        }
    }

    /// 422 `<Kind>.meta.k8s.io "" is invalid: ...` when any error was found.
    pub fn check(self, errors: Vec<FieldError>) -> Result<(), ApiError> {
        if errors.is_empty() {
            return Ok(());
        }
        Err(invalid_error("meta.k8s.io", self.kind(), "", &errors))
    }
}

/// `dryRun` from the query: absent is no dry run, and every value must be `All` (an empty
/// value too is refused, as kube refuses `[]string{""}`).
fn query_dry_run(query: &Query) -> (bool, Vec<FieldError>) {
    let values = query.all("dryRun");
    if values.is_empty() {
        return (false, Vec::new());
    }
    (true, write_validation::validate_dry_run(&values))
}

/// `dryRun`, `fieldManager`, `fieldValidation` (and `force` for patches) of a create, update or
/// non-apply patch, validated as kube validates them before it reads the object.
pub fn write_options(query: &Query, kind: OptionsKind) -> Result<(bool, FieldValidation), ApiError> {
    let mut errors = Vec::new();
    if kind == OptionsKind::Patch && query.has("force") {
        // Only server-side apply takes `force`.
        errors.push(FieldError::forbidden("force", "may not be specified for non-apply patch"));
    }
    common_checks(query, errors, kind)
}

/// The checks every write's options share, after the ones of its own kind (`errors`).
fn common_checks(
    query: &Query,
    mut errors: Vec<FieldError>,
    kind: OptionsKind,
) -> Result<(bool, FieldValidation), ApiError> {
    errors.extend(write_validation::validate_field_manager(query.get("fieldManager").unwrap_or("")));
    let (dry_run, dry_run_errors) = query_dry_run(query);
    errors.extend(dry_run_errors);
    errors.extend(write_validation::validate_field_validation(query.get("fieldValidation").unwrap_or("")));
    kind.check(errors)?;
    Ok((dry_run, FieldValidation::from_query(query)))
}

/// The options of a server-side apply (`PATCH` with `application/apply-patch+yaml`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyOptions {
    pub dry_run: bool,
    pub validation: FieldValidation,
    /// The applier: `fieldManager`, which an apply must name.
    pub manager: String,
    /// `force`: take the fields other managers own instead of failing with a conflict.
    pub force: bool,
}

/// The options of an apply, validated as kube's `ValidatePatchOptions` does for the apply patch
/// type: `fieldManager` is required (`Required value: is required for apply patch`), `force`
/// is allowed (a query boolean: absent, `0` and `false` are false).
pub fn apply_options(query: &Query) -> Result<ApplyOptions, ApiError> {
    let manager = query.get("fieldManager").unwrap_or("").to_owned();
    let mut errors = Vec::new();
    if manager.is_empty() {
        // kubectl defaults it to `kubectl`; controllers must set it.
        errors.push(FieldError::required("fieldManager", "is required for apply patch"));
    }
    let (dry_run, validation) = common_checks(query, errors, OptionsKind::Patch)?;
    Ok(ApplyOptions { dry_run, validation, manager, force: query.flag("force") })
}
