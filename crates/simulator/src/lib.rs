//! The watch simulator's judgment: what a run observed ([`record`]), whether it kept every
//! watch guarantee ([`checker`]), and whether each client behaved ([`audit`]).
//!
//! A simulation run writes through storage while clients list and watch, and faults hit both. What
//! comes out of the run is data: storage's change log ([`record::HistoryEvent`]), every client's
//! watches, lists and final store ([`record::ClientRecord`]), and what the run did on purpose that
//! makes a 410 legitimate ([`record::Known`]). [`checker::check`] reads only that data, with no I/O
//! and no server, so the same judgment applies to a live run, a recorded one and a hand-written
//! test; its [`checker::Verdict`] counts violations per guarantee and per client.
//!
//! The client audit judges the other side: from what the server saw of each client (its
//! requests, the answers, what its LISTs and WATCHes served; [`audit::record`]), whether the
//! client kept its side of the protocol, whatever its language. Both read storage's change log
//! through the same scopes (`scope.rs`, `view.rs`: a resource, a namespace, selectors).

#![warn(missing_docs)]

pub mod audit;
pub mod checker;
pub mod record;
mod scope;
mod view;

pub use checker::{Guarantee, Verdict, check};
