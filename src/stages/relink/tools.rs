//! Step 4 of relink: tool pairing (orphan results removed, unanswered calls answered) and the
//! envelope of records relink creates.

use super::*;

/// True when record `i` is a user/assistant message whose `content` is an empty list (the API
/// rejects such a message; a redaction that removed a record's only thinking block leaves one).
pub(super) fn is_empty_message(s: &mut Session<'_>, i: usize) -> bool {
    let candidate = s.header(i).is_some_and(|h| {
        h.kind.is_message() && h.uuid().is_some() && h.blocks().is_empty() && !h.content_is_text
    });
    candidate
        && s.records[i]
            .value()
            .ok()
            .and_then(|v| v.pointer("/message/content"))
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
}

/// Remove `tool_result` blocks answering no `tool_use` of the file, and messages left with no
/// content; true when records were removed (the caller relinks their children).
pub(super) fn drop_orphan_results(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<bool> {
    let mut empty = Vec::new();
    for i in 0..s.records.len() {
        if is_empty_message(s, i) {
            empty.push(i);
            st.empty_messages += 1;
            continue;
        }
        let orphans: HashSet<String> = match s.header(i) {
            Some(h) => h
                .tool_result_ids()
                .filter(|id| !s.tool_uses.contains_key(*id))
                .map(str::to_string)
                .collect(),
            None => continue,
        };
        if orphans.is_empty() {
            continue;
        }
        let m = object_mut(&mut s.records[i], cx, "relink")?;
        let Some(Value::Array(blocks)) = m.get_mut("message").and_then(|v| v.get_mut("content"))
        else {
            continue;
        };
        let before = blocks.len();
        blocks.retain(|b| {
            !(b.get("type").and_then(Value::as_str) == Some("tool_result")
                && b.get("tool_use_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| orphans.contains(id)))
        });
        st.orphan_results += (before - blocks.len()) as u64;
        if blocks.is_empty() {
            empty.push(i);
        }
    }
    for &i in empty.iter().rev() {
        s.remove(i);
    }
    Ok(!empty.is_empty())
}

/// Envelope fields a generated record copies from its neighbour, in Claude Code's order.
pub(super) const ENVELOPE: &[&str] = &[
    "isSidechain",
    "agentId",
    "userType",
    "entrypoint",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "slug",
];

/// A new record's envelope: `parentUuid`, then the [`ENVELOPE`] fields `from` has (with
/// `userType: "external"` and `isSidechain: false` when it has none).
pub(crate) fn envelope(from: Option<&Value>, parent: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "parentUuid".into(),
        parent.map_or(Value::Null, |p| Value::String(p.into())),
    );
    for key in ENVELOPE {
        if let Some(v) = from.and_then(|f| f.get(*key)) {
            m.insert((*key).into(), v.clone());
        }
    }
    m.entry("isSidechain").or_insert(Value::Bool(false));
    m.entry("userType").or_insert(Value::from("external"));
    m
}

/// The last piece of each assistant message that holds an unanswered `tool_use`: where its
/// synthetic results go, so they follow the whole message. For record `i` (a piece), the last
/// later piece of the same message and branch that descends from `i`, else `i`.
///
/// One walk per message, from its last piece up the chain while it stays at or after the
/// message's first piece in the file, marks the pieces that piece descends from; a piece off
/// that path (a forked message) falls back to a search of its own message's pieces. Messages
/// do not overlap in a file, so the walks are linear in the file together.
pub(super) fn last_pieces(s: &Session<'_>, wanted: &[usize]) -> HashMap<usize, usize> {
    let key = |i: usize| -> Option<(String, Branch)> {
        let h = s.header(i)?;
        (h.kind == Kind::Assistant).then_some(())?;
        Some((h.message_id().map(str::to_string)?, branch_of(s, i)?))
    };
    let mut messages: HashMap<(String, Branch), Vec<usize>> = HashMap::new();
    for &i in wanted {
        if let Some(k) = key(i) {
            messages.entry(k).or_default();
        }
    }
    if !messages.is_empty() {
        // Only a piece with a uuid can carry the results (they hang from it).
        for j in (0..s.records.len()).filter(|&j| uuid_of(s, j).is_some()) {
            if let Some(list) = key(j).and_then(|k| messages.get_mut(&k)) {
                list.push(j);
            }
        }
    }
    let mut out = HashMap::new();
    for &i in wanted {
        out.insert(i, i);
    }
    for pieces in messages.values() {
        let (Some(&first), Some(&last)) = (pieces.first(), pieces.last()) else {
            continue;
        };
        let members: HashSet<usize> = pieces.iter().copied().collect();
        let mut on_path = HashSet::new();
        let mut cur = Some(last);
        while let Some(k) = cur.filter(|&k| k >= first) {
            if !on_path.insert(k) {
                break;
            }
            cur = s.parent(k);
        }
        for &i in pieces {
            if !out.contains_key(&i) {
                continue;
            }
            let anchor = if on_path.contains(&i) {
                last
            } else {
                pieces
                    .iter()
                    .rev()
                    .take_while(|&&j| j > i)
                    .find(|&&j| members.contains(&j) && descends_from(s, j, i))
                    .copied()
                    .unwrap_or(i)
            };
            out.insert(i, anchor);
        }
    }
    out
}

/// Give every `tool_use` without a result a synthetic error result; true when records were
/// inserted. Linear: the anchors, their children and the last-prompts naming them are found
/// in one pass each, and the new records go in with one rebuild of the record list.
pub(super) fn answer_unpaired(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<bool> {
    // (tool_use record, id), in file and block order.
    let mut todo: Vec<(usize, String)> = Vec::new();
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if h.uuid().is_none() {
            continue;
        }
        // Only client tools: a server_tool_use is answered inside the assistant message.
        todo.extend(
            h.blocks()
                .iter()
                .filter(|b| b.kind() == "tool_use")
                .filter_map(|b| b.id())
                .filter(|id| !s.tool_results.contains_key(*id) && s.tool_uses.get(*id) == Some(&i))
                .map(|id| (i, id.to_string())),
        );
    }
    if todo.is_empty() {
        return Ok(false);
    }
    let mut users: Vec<usize> = todo.iter().map(|t| t.0).collect();
    users.dedup();
    let anchors = last_pieces(s, &users);
    // (anchor, [(tool_use record, id)]) by anchor, in file and block order within each.
    let mut groups: Vec<(usize, Vec<(usize, String)>)> = Vec::new();
    {
        let mut keyed: Vec<(usize, usize, String)> = todo
            .into_iter()
            .map(|(i, id)| (anchors[&i], i, id))
            .collect();
        keyed.sort_by_key(|t| t.0);
        for (anchor, i, id) in keyed {
            match groups.last_mut() {
                Some((a, v)) if *a == anchor => v.push((i, id)),
                _ => groups.push((anchor, vec![(i, id)])),
            }
        }
    }
    let anchor_uuids: HashMap<String, usize> = groups
        .iter()
        .filter_map(|(a, _)| Some((uuid_of(s, *a)?, *a)))
        .collect();
    // Records hanging from an anchor, and last-prompts naming one as their leaf.
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut leaves: HashMap<usize, Vec<usize>> = HashMap::new();
    for k in 0..s.records.len() {
        let Some(h) = s.header(k) else { continue };
        if let Some(&a) = h.parent_uuid().and_then(|p| anchor_uuids.get(p)) {
            if a != k {
                children.entry(a).or_default().push(k);
            }
        }
        if h.kind == Kind::LastPrompt {
            if let Some(&a) = h.leaf_uuid().and_then(|l| anchor_uuids.get(l)) {
                leaves.entry(a).or_default().push(k);
            }
        }
    }
    let mut inserts: Vec<(usize, Vec<Record<'static>>)> = Vec::new();
    for (anchor, calls) in groups {
        let Some(anchor_uuid) = uuid_of(s, anchor) else {
            continue;
        };
        let line = s.records[anchor].line;
        let template = s.records[anchor]
            .value()
            .map_err(|e| stage_err(cx, "relink", line, e))?
            .clone();
        let timestamp = template.get("timestamp").cloned();
        let mut parent = anchor_uuid.clone();
        let mut new_records = Vec::new();
        for (use_rec, id) in calls {
            let source = uuid_of(s, use_rec);
            // The call's record and position too: a tool id can repeat in a damaged file.
            let uuid = derived_uuid(&[
                "tool-answer",
                &anchor_uuid,
                &id,
                source.as_deref().unwrap_or(""),
                &use_rec.to_string(),
            ]);
            let mut m = envelope(Some(&template), Some(&parent));
            m.insert("type".into(), Value::from("user"));
            m.insert(
                "message".into(),
                json!({"role": "user", "content": [{
                    "type": "tool_result",
                    "content": INTERRUPTED_TOOL_TEXT,
                    "is_error": true,
                    "tool_use_id": id,
                }]}),
            );
            m.insert("uuid".into(), Value::from(uuid.clone()));
            if let Some(t) = &timestamp {
                m.insert("timestamp".into(), t.clone());
            }
            m.insert("toolUseResult".into(), Value::from(INTERRUPTED_TOOL_TEXT));
            m.insert("toolDenialKind".into(), Value::from("interrupted"));
            if let Some(src) = source {
                m.insert("sourceToolAssistantUUID".into(), Value::from(src));
            }
            new_records.push(Record::from_value(Value::Object(m)));
            parent = uuid;
            st.synthetic_results += 1;
        }
        for k in children.remove(&anchor).unwrap_or_default() {
            set_parent(s, k, Some(&parent), cx)?;
        }
        // A last-prompt that named the anchor as the leaf now names the end of the new chain.
        for k in leaves.remove(&anchor).unwrap_or_default() {
            object_mut(&mut s.records[k], cx, "relink")?
                .insert("leafUuid".into(), Value::from(parent.clone()));
        }
        inserts.push((anchor, new_records));
    }
    // Groups are in anchor order: one pass puts each batch right after its anchor.
    let added: usize = inserts.iter().map(|(_, v)| v.len()).sum();
    let old = std::mem::take(&mut s.records);
    let mut records = Vec::with_capacity(old.len() + added);
    let mut inserts = inserts.into_iter().peekable();
    for (k, r) in old.into_iter().enumerate() {
        records.push(r);
        while let Some((_, batch)) = inserts.next_if(|(a, _)| *a == k) {
            records.extend(batch);
        }
    }
    s.records = records;
    Ok(true)
}
