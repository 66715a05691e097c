//! aider's `.aider.chat.history.md`, read as aider's own `split_chat_history_markdown`
//! (aider/utils.py) reads it: `#### ` lines are the user's, `> ` lines aider's own output,
//! `# ` lines run headers, the rest the assistant's. Text only: aider's edits are
//! SEARCH/REPLACE blocks inside the assistant's text.

use std::path::Path;

use super::{Action, Block, Conversation, ImportError, Message, Options, Report, Role, Source};

/// The aider source.
pub struct Aider;

impl Source for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }

    fn detect(&self, path: &Path, head: &[u8]) -> bool {
        path.file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".aider.chat.history.md"))
            || head.starts_with(b"\n# aider chat started at")
            || head.starts_with(b"# aider chat started at")
    }

    fn read(
        &self,
        path: &Path,
        data: &[u8],
        _opts: &Options,
        report: &mut Report,
    ) -> Result<Conversation, ImportError> {
        let text = std::str::from_utf8(data).map_err(|e| {
            let line = data[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            ImportError::at(path, line, "not UTF-8 text")
        })?;
        let mut out: Vec<Message> = Vec::new();
        let mut cur: Option<(Role, Vec<&str>)> = None;
        let flush = |cur: &mut Option<(Role, Vec<&str>)>, out: &mut Vec<Message>| {
            if let Some((role, ls)) = cur.take() {
                let t = ls.join("\n").trim().to_string();
                if !t.is_empty() {
                    out.push(Message::new(role, vec![Block::Text(t)]));
                }
            }
        };
        for line in text.lines() {
            let (role, body) = if let Some(u) = line.strip_prefix("#### ") {
                (Some(Role::User), u)
            } else if line == "####" {
                (Some(Role::User), "")
            } else if line.starts_with("# ") {
                report.add(
                    "header",
                    Action::Dropped,
                    "a run header (`# aider chat started at`)",
                );
                flush(&mut cur, &mut out);
                continue;
            } else if line.starts_with("> ") || line == ">" {
                report.add(
                    "tool output",
                    Action::Dropped,
                    "aider's own output (`> ` lines): its model never saw it",
                );
                continue;
            } else {
                (Some(Role::Assistant), line)
            };
            let role = role.expect("set above");
            match &mut cur {
                Some((r, ls)) if *r == role => ls.push(body),
                _ => {
                    flush(&mut cur, &mut out);
                    cur = Some((role, vec![body]));
                }
            }
        }
        flush(&mut cur, &mut out);
        for m in &out {
            let kind = if m.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            report.add(kind, Action::Kept, "message (text)");
        }
        Ok(Conversation {
            messages: out,
            ..Conversation::default()
        })
    }
}
