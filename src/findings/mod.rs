//! What cchist reports rather than changes: structural defects ([`validate`]), CI policies
//! ([`policy`]) and the report formats they share ([`report`]).

pub mod policy;
pub mod report;
pub mod validate;
