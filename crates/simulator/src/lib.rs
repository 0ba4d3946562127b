//! The watch simulator's judgment: what a run observed ([`record`]) and whether it kept every
//! watch guarantee ([`checker`]).
//!
//! A simulation run writes through storage while clients list and watch, and faults hit both. What
//! comes out of the run is data: storage's change log ([`record::HistoryEvent`]), every client's
//! watches, lists and final store ([`record::ClientRecord`]), and what the run did on purpose that
//! makes a 410 legitimate ([`record::Known`]). [`checker::check`] reads only that data, with no I/O
//! and no server, so the same judgment applies to a live run, a recorded one and a hand-written
//! test; its [`checker::Verdict`] counts violations per guarantee and per client.

#![warn(missing_docs)]

pub mod checker;
pub mod record;

pub use checker::{Guarantee, Verdict, check};
