//! Step 5 of relink: every other uuid reference (logical parents, leaves, tool sources,
//! compaction metadata) made to resolve.

use super::*;

/// What to do with one reference.
pub(super) enum Fix {
    Set(String),
    Remove,
}

/// True when record `i` is a main-chain conversational record with a uuid: what a dangling
/// reference after it may point at (the nearest earlier one).
pub(super) fn is_main(s: &Session<'_>, i: usize) -> bool {
    s.header(i)
        .is_some_and(|h| h.uuid().is_some() && !h.is_sidechain && is_conversational(h))
}

/// True when record `i` may contain `key` (a byte search, unless the record is held as an
/// edited value and its bytes are stale).
pub(super) fn mentions(rec: &Record<'_>, key: &str) -> bool {
    if rec.is_value_edited() {
        return true;
    }
    let needle = format!("\"{key}\"");
    memchr::memmem::find(rec.raw(), needle.as_bytes()).is_some()
}

pub(super) fn fix_references(
    s: &mut Session<'_>,
    cx: &Cx,
    orig: &HashMap<String, Option<String>>,
    st: &mut Stats,
    touched_only: bool,
) -> Result<()> {
    let compact: Vec<&str> = REFERENCE_FIELDS
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| p.starts_with("/compactMetadata/"))
        .collect();
    let mut tombstones = Resolver::default();
    // The nearest main-chain conversational record before `i`, kept as the loop goes (a walk
    // back per dangling reference made a run of them quadratic).
    let mut earlier_main: Option<usize> = None;
    for i in 0..s.records.len() {
        let earlier = earlier_main;
        if is_main(s, i) {
            earlier_main = Some(i);
        }
        let earlier = || earlier.and_then(|j| uuid_of(s, j));
        let Some(h) = s.header(i) else { continue };
        let has_compact_metadata = h.has_compact_metadata;
        let mut fixes: Vec<(&str, Fix)> = Vec::new();
        // Fields the header already holds.
        if let Some(v) = h.logical_parent_uuid() {
            if !s.by_uuid.contains_key(v) {
                let fix = match tombstones.resolve(s, v) {
                    Resolution::Survivor(u) => Some(Fix::Set(u)),
                    Resolution::Root => Some(Fix::Remove),
                    Resolution::Unknown if touched_only => None,
                    Resolution::Unknown => Some(earlier().map_or(Fix::Remove, Fix::Set)),
                };
                if let Some(fix) = fix {
                    fixes.push(("logicalParentUuid", fix));
                }
            }
        }
        if let Some(v) = h.source_tool_assistant_uuid() {
            let untouched = touched_only && resolve(s, v) == Resolution::Unknown;
            if !s.by_uuid.contains_key(v) && !untouched {
                let src = h
                    .tool_result_ids()
                    .find_map(|id| s.tool_uses.get(id))
                    .and_then(|&j| uuid_of(s, j));
                fixes.push(("sourceToolAssistantUUID", src.map_or(Fix::Remove, Fix::Set)));
            }
        }
        if let Some(v) = h.leaf_uuid() {
            if !s.by_uuid.contains_key(v) {
                match tombstones.resolve(s, v) {
                    Resolution::Survivor(u) => fixes.push(("leafUuid", Fix::Set(u))),
                    Resolution::Root => fixes.push(("leafUuid", Fix::Remove)),
                    // summary.leafUuid points into other files by design.
                    Resolution::Unknown if h.kind == Kind::LastPrompt && !touched_only => {
                        fixes.push(("leafUuid", earlier().map_or(Fix::Remove, Fix::Set)))
                    }
                    Resolution::Unknown => {}
                }
            }
        }
        for (key, fix) in fixes {
            let m = object_mut(&mut s.records[i], cx, "relink")?;
            match fix {
                Fix::Set(u) => {
                    m.insert(key.into(), Value::from(u));
                    st.refs_rewritten += 1;
                }
                Fix::Remove => {
                    m.shift_remove(key);
                    st.refs_removed += 1;
                }
            }
        }
        if !compact.is_empty() && has_compact_metadata {
            fix_compact_metadata(s, i, cx, orig, st)?;
        }
        // Any other reference field (added to the table later): tombstones only.
        for (ptr, _) in REFERENCE_FIELDS {
            let generic = !matches!(
                *ptr,
                "/parentUuid" | "/logicalParentUuid" | "/leafUuid" | "/sourceToolAssistantUUID"
            ) && !ptr.starts_with("/compactMetadata/");
            if generic {
                fix_generic(s, i, ptr, cx, st)?;
            }
        }
    }
    Ok(())
}

pub(super) fn fix_generic(
    s: &mut Session<'_>,
    i: usize,
    ptr: &str,
    cx: &Cx,
    st: &mut Stats,
) -> Result<()> {
    let (parent_ptr, last) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    let key = if last == "*" {
        parent_ptr.rsplit('/').next().unwrap_or("")
    } else {
        last
    };
    if key.is_empty() || !mentions(&s.records[i], key) {
        return Ok(());
    }
    let line = s.records[i].line;
    let v = s.records[i]
        .value()
        .map_err(|e| stage_err(cx, "relink", line, e))?;
    if last == "*" {
        let Some(Value::Array(a)) = v.pointer(parent_ptr) else {
            return Ok(());
        };
        let gone: Vec<usize> = a
            .iter()
            .enumerate()
            .filter(|(_, x)| {
                x.as_str()
                    .is_some_and(|u| !s.by_uuid.contains_key(u) && s.removed.contains_key(u))
            })
            .map(|(k, _)| k)
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        let v = s.records[i]
            .value_mut()
            .map_err(|e| stage_err(cx, "relink", line, e))?;
        if let Some(Value::Array(a)) = v.pointer_mut(parent_ptr) {
            for k in gone.into_iter().rev() {
                a.remove(k);
                st.refs_removed += 1;
            }
        }
        return Ok(());
    }
    let Some(u) = v.pointer(ptr).and_then(Value::as_str).map(str::to_string) else {
        return Ok(());
    };
    if s.by_uuid.contains_key(&u) {
        return Ok(());
    }
    let fix = match resolve(s, &u) {
        Resolution::Survivor(n) => Fix::Set(n),
        Resolution::Root => Fix::Remove,
        Resolution::Unknown => return Ok(()),
    };
    let v = s.records[i]
        .value_mut()
        .map_err(|e| stage_err(cx, "relink", line, e))?;
    match fix {
        Fix::Set(n) => {
            if let Some(x) = v.pointer_mut(ptr) {
                *x = Value::from(n);
                st.refs_rewritten += 1;
            }
        }
        Fix::Remove => {
            if let Some(Value::Object(o)) = v.pointer_mut(parent_ptr) {
                o.shift_remove(last);
                st.refs_removed += 1;
            }
        }
    }
    Ok(())
}

/// `compactMetadata.preservedSegment` / `preservedMessages` after records were removed.
///
/// Claude Code splices the preserved messages right after the anchor (normally the compact
/// summary) and gives up on the whole splice when one listed uuid is missing. So: listed uuids
/// that are gone are dropped; the segment shrinks to its surviving head and tail (found on the
/// original chain through the tombstones, else from the list) or disappears with its last
/// member; a missing anchor becomes what replaced it (a tombstone's survivor), else the
/// boundary itself (the summary's parent).
pub(super) fn fix_compact_metadata(
    s: &mut Session<'_>,
    i: usize,
    cx: &Cx,
    orig: &HashMap<String, Option<String>>,
    st: &mut Stats,
) -> Result<()> {
    let line = s.records[i].line;
    let v = s.records[i]
        .value()
        .map_err(|e| stage_err(cx, "relink", line, e))?;
    let Some(mut new_meta) = v.get("compactMetadata").and_then(Value::as_object).cloned() else {
        return Ok(());
    };
    let own = v.get("uuid").and_then(Value::as_str).map(str::to_string);
    let missing = |u: &str| !s.by_uuid.contains_key(u);
    let new_anchor = |a: &str| match resolve(s, a) {
        Resolution::Survivor(n) => Some(n),
        _ => own.clone(),
    };
    let str_of =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(String::from);
    let mut changed = 0u64;
    let mut removed = 0u64;
    // The surviving preserved uuids in order, from the list (before it is filtered).
    let listed: Vec<String> = new_meta
        .get("preservedMessages")
        .and_then(|pm| pm.get("uuids"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|u| !missing(u))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(seg)) = new_meta.get_mut("preservedSegment") {
        let head = str_of(seg, "headUuid");
        let tail = str_of(seg, "tailUuid");
        let mut drop_segment = false;
        if let (Some(head), Some(tail)) = (&head, &tail) {
            if missing(head) || missing(tail) {
                let survivors: Vec<String> = match segment_path(s, orig, head, tail) {
                    // tail → head order; the list is head → tail.
                    Some(path) => path.into_iter().filter(|u| !missing(u)).rev().collect(),
                    None => listed.clone(),
                };
                match (survivors.first(), survivors.last()) {
                    (Some(h), Some(t)) => {
                        for (key, old, new) in [("headUuid", head, h), ("tailUuid", tail, t)] {
                            if old != new {
                                seg.insert(key.into(), Value::from(new.as_str()));
                                changed += 1;
                            }
                        }
                    }
                    _ => drop_segment = true,
                }
            }
        }
        if let Some(a) = str_of(seg, "anchorUuid").filter(|a| missing(a)) {
            match new_anchor(&a) {
                Some(n) => {
                    seg.insert("anchorUuid".into(), Value::from(n));
                    changed += 1;
                }
                None => drop_segment = true,
            }
        }
        if drop_segment {
            new_meta.shift_remove("preservedSegment");
            removed += 1;
        }
    }
    if let Some(Value::Object(pm)) = new_meta.get_mut("preservedMessages") {
        let mut drop_pm = false;
        if let Some(a) = str_of(pm, "anchorUuid").filter(|a| missing(a)) {
            match new_anchor(&a) {
                Some(n) => {
                    pm.insert("anchorUuid".into(), Value::from(n));
                    changed += 1;
                }
                None => drop_pm = true,
            }
        }
        for key in ["uuids", "allUuids"] {
            if let Some(Value::Array(list)) = pm.get_mut(key) {
                let before = list.len();
                list.retain(|x| !x.as_str().is_some_and(missing));
                removed += (before - list.len()) as u64;
            }
        }
        if drop_pm {
            new_meta.shift_remove("preservedMessages");
            removed += 1;
        }
    }
    if changed + removed == 0 {
        return Ok(());
    }
    object_mut(&mut s.records[i], cx, "relink")?
        .insert("compactMetadata".into(), Value::Object(new_meta));
    st.refs_rewritten += changed;
    st.refs_removed += removed;
    Ok(())
}

/// The uuids from `tail` up to `head` (inclusive) on the original chain, or `None` when the
/// walk does not reach `head`.
pub(super) fn segment_path(
    s: &Session<'_>,
    orig: &HashMap<String, Option<String>>,
    head: &str,
    tail: &str,
) -> Option<Vec<String>> {
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = Some(tail.to_string());
    while let Some(u) = cur {
        if !seen.insert(u.clone()) {
            return None;
        }
        path.push(u.clone());
        if u == head {
            return Some(path);
        }
        cur = match orig.get(&u) {
            Some(p) => p.clone(),
            None => s.removed.get(&u)?.clone(),
        };
    }
    None
}
