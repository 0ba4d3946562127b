//! The embedded MVCC store (being written).
