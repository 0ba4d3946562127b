//! Who a client is: its authenticated user (a scenario gives each program a token of its own,
//! user `simulate:<name>`), else its User-Agent and source address, so that the programs on
//! one machine that send no credentials are still told apart when they say who they are.

use crate::authn::{ANONYMOUS, Authentication};

use super::Peer;

/// The client `parts` comes from.
pub fn of(parts: &http::request::Parts, authentication: &Authentication) -> String {
    if let Ok(user) = authentication.authenticate(parts)
        && user.name != ANONYMOUS
    {
        return user.name;
    }
    let agent = parts.headers.get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("no User-Agent");
    match parts.extensions.get::<Peer>() {
        Some(Peer(address)) => format!("{agent} @ {}", address.ip()),
        None => agent.to_string(),
    }
}
