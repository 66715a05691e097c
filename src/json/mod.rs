//! Hand-written JSON lexers that allocate nothing: the validating line scanner that header
//! reads and splicing stages walk records with. (The redact stage's string walker, which
//! decodes escapes to judge strings, lives with that stage in `stages::redact::json`.)

pub mod number;
pub mod scan;
