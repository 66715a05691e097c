//! Turn edits: delete, replace and insert whole turns, alone or as an operations document.
//!
//! Every reference to a turn is resolved against the session as it was before any edit, so the
//! numbers `history list` printed stay valid for the whole document; all operations are checked
//! first and either all apply or none does. Removed records leave tombstones (see
//! [`Session::tombstone`]) so the `relink` stage that runs after the edit re-points every
//! reference: into a replaced range → the replacement, into a deleted turn → the nearest
//! surviving ancestor.
//!
//! ```json
//! {"action": "modify_history", "operations": [
//!   {"type": "replace", "turns": ["uuid1", "uuid2"], "with": {"type": "assistant", "content": "Summary: …", "uuid": "summary-1"}},
//!   {"type": "delete", "turns": ["uuid4"]},
//!   {"type": "insert", "after": "uuid5", "content": {"type": "user", "content": "Let's focus.", "uuid": "insert-1"}}]}
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::OptionError;
use crate::stages::{Cx, Scope, Stage};
use crate::transcript::record::Kind;
use crate::transcript::record::Record;
use crate::transcript::session::{Session, Turn};

/// Who speaks in a new record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A `user` record with string content.
    User,
    /// An `assistant` record with one text block.
    Assistant,
}

/// A record to create.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// `user` or `assistant`.
    #[serde(rename = "type")]
    pub role: Role,
    /// The text.
    pub content: String,
    /// A UUID to use, or a label of the caller's that is mapped to a fresh UUID.
    #[serde(default)]
    pub uuid: Option<String>,
}

/// A reference to a turn: its number, or the uuid of any of its records.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum TurnRef {
    /// 1-based turn number as `history list` prints it.
    Number(usize),
    /// uuid of any record of the turn, or the label of a record an earlier operation created.
    Uuid(String),
}

impl std::fmt::Display for TurnRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnRef::Number(n) => write!(f, "turn {n}"),
            TurnRef::Uuid(u) => write!(f, "{u}"),
        }
    }
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Op {
    /// Remove whole turns.
    Delete {
        /// The turns.
        turns: Vec<TurnRef>,
    },
    /// Replace consecutive turns with one message.
    Replace {
        /// The turns (consecutive).
        turns: Vec<TurnRef>,
        /// What stands in their place.
        with: NewMessage,
    },
    /// Insert a message after a turn.
    Insert {
        /// The turn after which the message goes.
        after: TurnRef,
        /// The message.
        content: NewMessage,
    },
}

/// An operations document.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsDoc {
    /// Must be `modify_history`.
    pub action: String,
    /// The operations, applied as one.
    pub operations: Vec<Op>,
}

impl OpsDoc {
    /// Parse and check a document; errors name the field (`operations[2].turns`).
    pub fn parse(text: &str) -> Result<OpsDoc, OptionError> {
        let doc: OpsDoc = serde_json::from_str(text).map_err(|e| {
            OptionError::general(format!("not an operations document: {e} (expected {{\"action\":\"modify_history\",\"operations\":[…]}})"))
        })?;
        if doc.action != "modify_history" {
            return Err(OptionError::key(
                "action",
                format!("expected \"modify_history\", found {:?}", doc.action),
            ));
        }
        if doc.operations.is_empty() {
            return Err(OptionError::key("operations", "is empty"));
        }
        for (i, op) in doc.operations.iter().enumerate() {
            match op {
                Op::Delete { turns } | Op::Replace { turns, .. } if turns.is_empty() => {
                    return Err(OptionError::key(
                        &format!("operations[{i}].turns"),
                        "is empty",
                    ))
                }
                _ => {}
            }
        }
        Ok(doc)
    }
}

/// What an edit did: created records by label, for the caller to print.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EditReport {
    /// Label (or given UUID) → the UUID written.
    pub labels: BTreeMap<String, String>,
    /// Turn numbers removed.
    pub removed_turns: Vec<usize>,
}

/// A session-scoped stage that applies operations. Run `relink` after it.
pub struct EditStage {
    ops: Vec<Op>,
    report: std::sync::Mutex<EditReport>,
}

impl EditStage {
    /// A stage applying `ops` as one edit.
    pub fn new(ops: Vec<Op>) -> Self {
        EditStage {
            ops,
            report: Default::default(),
        }
    }

    /// What the last run did.
    pub fn report(&self) -> EditReport {
        self.report.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Stage for EditStage {
    /// It removes records (a range it replaces, turns an edit deletes): a secret they showed
    /// must be known before they go, so that a restatement of it in what replaces them is
    /// replaced too.
    fn cuts_text(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "edit"
    }
    fn scope(&self) -> Scope {
        Scope::Session
    }
    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> crate::error::Result<()> {
        let r = apply(s, &self.ops).map_err(|message| crate::error::Error::Stage {
            path: cx.origin.clone(),
            line: None,
            stage: "edit",
            message,
        })?;
        if let Ok(mut slot) = self.report.lock() {
            *slot = r;
        }
        Ok(())
    }
}

/// Where a group of new records goes, in terms of the original record indexes.
#[derive(Clone, Copy)]
enum Anchor {
    /// Before original record `i` (a replacement takes the place of its range).
    Before(usize),
    /// After original record `i`.
    After(usize),
}

/// New records placed together as one linear chain: a replacement and what is inserted after
/// it, or the inserts after one turn.
struct Group {
    anchor: Anchor,
    /// The records, in chain order.
    values: Vec<Value>,
    /// uuid of the last record of the group: what follows the group chains onto it.
    tail: String,
    /// Original index of the next turn's prompt, re-parented onto `tail`.
    adopt: Option<usize>,
    /// Removed uuids the group stands for (a replacement): their references go to `tail`.
    replaces: Vec<String>,
}

/// Apply `ops` to `s` (all or nothing); returns labels and removed turns.
pub fn apply(s: &mut Session<'_>, ops: &[Op]) -> Result<EditReport, String> {
    let turns = s.turns();
    if turns.is_empty() {
        return Err("the session has no turns (no user prompt on its main chain)".into());
    }
    let path: Vec<usize> = s.leaf().map(|l| s.logical_path(l)).unwrap_or_default();
    let path_pos: HashMap<usize, usize> = path.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    let mut report = EditReport::default();
    let mut claimed: HashMap<usize, usize> = HashMap::new(); // turn index → op index
    let mut delete: HashSet<usize> = HashSet::new(); // original record indexes
    let mut groups: Vec<Group> = Vec::new();
    let mut label_group: HashMap<String, usize> = HashMap::new();
    let mut after_turn_group: HashMap<usize, usize> = HashMap::new();
    let mut used_uuids: HashSet<String> = s.by_uuid.keys().cloned().collect();

    for (oi, op) in ops.iter().enumerate() {
        match op {
            Op::Delete { turns: refs } | Op::Replace { turns: refs, .. } => {
                let mut idx = Vec::new();
                for (ri, r) in refs.iter().enumerate() {
                    let t = resolve(s, &turns, r)
                        .map_err(|e| format!("operation {oi}: field `turns[{ri}]`: {e}"))?;
                    if let Some(prev) = claimed.insert(t, oi) {
                        if prev != oi {
                            return Err(format!(
                                "operation {oi}: field `turns[{ri}]`: turn {} is already changed by operation {prev}",
                                turns[t].number
                            ));
                        }
                    }
                    if after_turn_group.contains_key(&t) {
                        return Err(format!(
                            "operation {oi}: field `turns[{ri}]`: an earlier operation inserts after turn {}",
                            turns[t].number
                        ));
                    }
                    idx.push(t);
                }
                idx.sort_unstable();
                idx.dedup();
                for &t in &idx {
                    delete.extend(turns[t].records.iter().copied());
                    report.removed_turns.push(turns[t].number);
                }
                if let Op::Replace { with, .. } = op {
                    if idx.windows(2).any(|w| w[1] != w[0] + 1) {
                        return Err(format!(
                            "operation {oi}: field `turns`: the turns of a replace must be consecutive"
                        ));
                    }
                    let first = &turns[idx[0]];
                    let uuid = new_uuid(with, oi, "with", &mut used_uuids, &mut report)?;
                    let parent = s.records[first.prompt]
                        .header()
                        .and_then(|h| h.parent_uuid().map(str::to_string));
                    let tpl = template(s, first.prompt);
                    let mut value = message(&tpl, with, &uuid, parent.as_deref());
                    let replaces: Vec<String> = idx
                        .iter()
                        .flat_map(|&t| turns[t].records.iter())
                        .filter_map(|&i| {
                            s.records[i]
                                .header()
                                .and_then(|h| h.uuid().map(str::to_string))
                        })
                        .collect();
                    value["cchistEdit"] = json!({"op": "replace", "replacedUuids": replaces});
                    if let Some(l) = &with.uuid {
                        label_group.insert(l.clone(), groups.len());
                    }
                    groups.push(Group {
                        anchor: Anchor::Before(
                            *first.records.iter().min().expect("turn has records"),
                        ),
                        values: vec![value],
                        tail: uuid,
                        adopt: None,
                        replaces,
                    });
                }
            }
            Op::Insert { after, content } => {
                let uuid = new_uuid(content, oi, "content", &mut used_uuids, &mut report)?;
                let by_label = match after {
                    TurnRef::Uuid(l) => label_group.get(l).copied(),
                    TurnRef::Number(_) => None,
                };
                let gi = match by_label {
                    Some(gi) => gi,
                    None => {
                        let t = resolve(s, &turns, after)
                            .map_err(|e| format!("operation {oi}: field `after`: {e}"))?;
                        if let Some(&prev) = claimed.get(&t) {
                            return Err(format!(
                                "operation {oi}: field `after`: turn {} is removed by operation {prev}; insert after the record that replaces it (its label) or after another turn",
                                turns[t].number
                            ));
                        }
                        *after_turn_group.entry(t).or_insert_with(|| {
                            let turn = &turns[t];
                            let last_chain = turn
                                .records
                                .iter()
                                .filter_map(|i| path_pos.get(i).map(|&p| (p, *i)))
                                .max()
                                .map_or(turn.prompt, |(_, i)| i);
                            let tail = s.records[last_chain]
                                .header()
                                .and_then(|h| h.uuid().map(str::to_string))
                                .unwrap_or_default();
                            groups.push(Group {
                                anchor: Anchor::After(
                                    *turn.records.iter().max().expect("turn has records"),
                                ),
                                values: Vec::new(),
                                tail,
                                adopt: turns.get(t + 1).map(|n| n.prompt),
                                replaces: Vec::new(),
                            });
                            groups.len() - 1
                        })
                    }
                };
                let at = match groups[gi].anchor {
                    Anchor::Before(i) | Anchor::After(i) => i,
                };
                let tpl = template(s, at);
                let g = &mut groups[gi];
                let parent = (!g.tail.is_empty()).then(|| g.tail.clone());
                let mut value = message(&tpl, content, &uuid, parent.as_deref());
                value["cchistEdit"] = json!({"op": "insert"});
                g.values.push(value);
                g.tail = uuid;
                if let Some(l) = &content.uuid {
                    label_group.insert(l.clone(), gi);
                }
            }
        }
    }
    rebuild(s, delete, groups);
    report.removed_turns.sort_unstable();
    Ok(report)
}

fn resolve(s: &Session<'_>, turns: &[Turn], r: &TurnRef) -> Result<usize, String> {
    match r {
        TurnRef::Number(n) => turns
            .iter()
            .position(|t| t.number == *n)
            .ok_or_else(|| format!("no turn {n}: the session has {} turns", turns.len())),
        TurnRef::Uuid(u) => {
            let i = *s
                .by_uuid
                .get(u)
                .ok_or_else(|| format!("no record with uuid {u} in this session"))?;
            turns
                .iter()
                .position(|t| t.records.contains(&i))
                .ok_or_else(|| format!("record {u} belongs to no turn"))
        }
    }
}

fn new_uuid(
    m: &NewMessage,
    oi: usize,
    field: &str,
    used: &mut HashSet<String>,
    report: &mut EditReport,
) -> Result<String, String> {
    let u = match &m.uuid {
        Some(given) if uuid::Uuid::parse_str(given).is_ok() => {
            if used.contains(given) {
                return Err(format!(
                    "operation {oi}: field `{field}.uuid`: {given} is already used by a record"
                ));
            }
            given.clone()
        }
        _ => uuid::Uuid::new_v4().to_string(),
    };
    if let Some(label) = &m.uuid {
        if report.labels.insert(label.clone(), u.clone()).is_some() {
            return Err(format!(
                "operation {oi}: field `{field}.uuid`: label {label} is used twice"
            ));
        }
    }
    used.insert(u.clone());
    Ok(u)
}

/// The conversational record nearest to `at` (searching backwards, then forwards), as a value.
fn template(s: &mut Session<'_>, at: usize) -> Value {
    let n = s.records.len();
    let order = (0..=at.min(n.saturating_sub(1))).rev().chain(at + 1..n);
    let mut model = None;
    let mut base = None;
    for i in order {
        let Some(h) = s.records[i].header() else {
            continue;
        };
        if h.is_sidechain || !h.kind.is_message() {
            continue;
        }
        let is_assistant = h.kind == Kind::Assistant;
        let Ok(v) = s.records[i].value() else {
            continue;
        };
        if model.is_none() && is_assistant {
            model = v
                .pointer("/message/model")
                .and_then(Value::as_str)
                .filter(|m| *m != "<synthetic>")
                .map(str::to_string);
        }
        if base.is_none() {
            base = Some(v.clone());
        }
        if base.is_some() && model.is_some() {
            break;
        }
    }
    let mut t = base.unwrap_or_else(|| json!({}));
    t["__model"] = Value::from(model.unwrap_or_else(|| "claude-sonnet-4-5".into()));
    t
}

/// A new user or assistant record shaped like the ones Claude Code writes.
pub fn message(template: &Value, m: &NewMessage, uuid: &str, parent: Option<&str>) -> Value {
    // The template is a main-chain record (see `template`), so the envelope is too.
    let mut v = crate::stages::relink::envelope(Some(template), parent);
    match m.role {
        Role::User => {
            v.insert("type".into(), "user".into());
            v.insert(
                "message".into(),
                json!({"role": "user", "content": m.content}),
            );
        }
        Role::Assistant => {
            let id = format!("msg_cchist_{}", uuid.replace('-', ""));
            v.insert("type".into(), "assistant".into());
            v.insert(
                "message".into(),
                json!({
                    "id": id, "type": "message", "role": "assistant",
                    "model": template.get("__model").cloned().unwrap_or_else(|| "claude-sonnet-4-5".into()),
                    "content": [{"type": "text", "text": m.content}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 0, "output_tokens": 0}
                }),
            );
        }
    }
    v.insert("uuid".into(), uuid.into());
    v.insert("timestamp".into(), crate::io::clock::now().into());
    Value::Object(v)
}

/// Build the new record list: drop `delete`, place the groups, re-parent adopted prompts onto
/// their group's tail, and leave tombstones pointing replaced uuids at it too.
fn rebuild(s: &mut Session<'_>, delete: HashSet<usize>, groups: Vec<Group>) {
    let mut before: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut after: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut adopt: HashMap<usize, String> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        match g.anchor {
            Anchor::Before(i) => before.entry(i).or_default().push(gi),
            Anchor::After(i) => after.entry(i).or_default().push(gi),
        }
        if let Some(i) = g.adopt {
            adopt.insert(i, g.tail.clone());
        }
    }
    let tombstones: Vec<(String, String)> = groups
        .iter()
        .flat_map(|g| g.replaces.iter().map(|u| (u.clone(), g.tail.clone())))
        .collect();
    let mut values: Vec<Vec<Value>> = groups.into_iter().map(|g| g.values).collect();
    let old = std::mem::take(&mut s.records);
    let mut out: Vec<Record<'_>> = Vec::with_capacity(old.len() + values.len());
    let mut place = |gi: &usize, out: &mut Vec<Record<'_>>| {
        for v in std::mem::take(&mut values[*gi]) {
            out.push(Record::from_value(v));
        }
    };
    for (i, mut rec) in old.into_iter().enumerate() {
        for gi in before.get(&i).into_iter().flatten() {
            place(gi, &mut out);
        }
        if !delete.contains(&i) {
            if let Some(u) = adopt.get(&i) {
                if let Ok(v) = rec.value_mut() {
                    v["parentUuid"] = Value::from(u.as_str());
                }
            }
            out.push(rec);
        }
        for gi in after.get(&i).into_iter().flatten() {
            place(gi, &mut out);
        }
    }
    s.records = out;
    s.reindex();
    for (u, tail) in tombstones {
        s.tombstone(&u, Some(&tail));
    }
}
