//! Ids cchist writes: derived from what they stand for, never drawn at random, so the same
//! input gives the same output run after run, whatever `-j` is.

/// The uuid of a record cchist writes, derived from what it stands for (`parts`: the records
/// and ids it answers or replaces): the same input gives the same output, run after run and
/// whatever `-j` is, so outputs can be compared byte for byte and a second run is a no-op.
/// A name-based (v5) uuid in cchist's own namespace, so it cannot meet a uuid Claude Code
/// draws (v4) and distinct parts give distinct uuids.
pub fn derived_uuid(parts: &[&str]) -> String {
    derived_uuid_of(parts.iter().map(|p| p.as_bytes()))
}

fn derived_uuid_of<'a>(parts: impl Iterator<Item = &'a [u8]>) -> String {
    // A namespace drawn at random once and fixed: cchist's own, so no other tool's v5 names meet ours.
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6b1f_3c2a_9d4e_5f60_8a7b_1c2d_3e4f_5a6b);
    let mut name = Vec::new();
    for p in parts {
        name.extend_from_slice(p);
        name.push(0);
    }
    uuid::Uuid::new_v5(&NAMESPACE, &name).to_string()
}

/// What an id field that held a secret becomes (`uuid`, `parentUuid`, a `tool_use` id, …):
/// an id of the same kind derived from the old value, so that distinct ids stay distinct and
/// every reference to one (a child's `parentUuid`, a `tool_result`'s `tool_use_id`) still
/// meets it — one placeholder for all of them would make records their own parents. A uuid
/// field gets a uuid; any other id `cchist_` and 32 hex digits (valid as a tool id,
/// `^[A-Za-z0-9_-]+$`).
pub fn pseudonym_id(old: &[u8], uuid_field: bool) -> String {
    let u = derived_uuid_of([&b"redacted-id"[..], old].into_iter());
    if uuid_field {
        u
    } else {
        format!("cchist_{}", u.replace('-', ""))
    }
}
