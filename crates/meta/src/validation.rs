//! (being written by the validation work; a minimal placeholder so dependents compile.
//! Keep the `NameRule` variants below: the registry uses all four, including Dns1035Label for
//! services, whose names kube validates with NameIsDNS1035Label.)

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    Subdomain,
    Label,
    Dns1035Label,
    PathSegment,
}
