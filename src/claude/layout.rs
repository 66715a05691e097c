//! Finding sessions: the config root, project folders, session files, and whether a session
//! looks live.
//!
//! Claude Code keeps transcripts under `$CLAUDE_CONFIG_DIR/projects` (default
//! `~/.claude/projects`), one folder per working directory, one `<session-id>.jsonl` per session
//! with a companion folder `<session-id>/` (`subagents/`, `tool-results/`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Origin, Result};
use crate::io::backup::{backups, copies, BACKUP_MARK};
use crate::io::input::{Input, Treatment};
use crate::io::output::is_temp_name;

/// The Claude Code config root: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn config_root() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".claude")),
        None => Err(Error::Other(
            "cannot find the Claude Code config folder: set CLAUDE_CONFIG_DIR or HOME".into(),
        )),
    }
}

/// `<root>/projects`.
pub fn projects_dir(root: &Path) -> PathBuf {
    root.join("projects")
}

/// The project folder name Claude Code uses for a working directory: every character that is
/// not ASCII alphanumeric becomes `-` (per UTF-16 code unit, as JavaScript counts); names over
/// 200 characters are cut and given a hash suffix. The suffix differs between Claude Code
/// builds, so callers fall back to matching the records' `cwd` when the folder is missing.
///
/// ```
/// assert_eq!(cchist::claude::layout::project_folder_name("/Users/a/my.app"), "-Users-a-my-app");
/// ```
pub fn project_folder_name(cwd: &str) -> String {
    let mut s = String::with_capacity(cwd.len());
    for ch in cwd.chars() {
        if ch.is_ascii_alphanumeric() {
            s.push(ch);
        } else {
            for _ in 0..ch.len_utf16() {
                s.push('-');
            }
        }
    }
    if s.len() <= 200 {
        return s;
    }
    // Node build: Java-style 32-bit string hash, absolute value, base 36.
    let mut h: i32 = 0;
    for u in cwd.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(u as i32);
    }
    format!("{}-{}", &s[..200], to_base36(h.unsigned_abs()))
}

fn to_base36(mut n: u32) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut v = Vec::new();
    while n > 0 {
        v.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    v.reverse();
    String::from_utf8(v).expect("ascii")
}

/// One session file found under a projects folder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionFile {
    /// The session id (the file stem).
    pub id: String,
    /// The `.jsonl` file.
    pub path: PathBuf,
    /// The project folder holding it.
    pub project_dir: PathBuf,
}

/// What part of a session a file is, which decides how a pipeline treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// `<id>.jsonl`: the transcript Claude Code resumes.
    Main,
    /// `<id>/subagents/agent-*.jsonl`: a sub-agent's own transcript (a chain of its own).
    Subagent,
    /// A JSON document in the companion folder (`subagents/agent-*.meta.json`): its strings
    /// are redacted like a record's, nothing else changes.
    Document,
    /// Any other companion file (`tool-results/*.txt`, and what a future Claude Code puts
    /// there): plain text, redacted as text; one that is binary (a zip, an image) is left byte
    /// for byte ([`crate::engine::pipeline::is_binary`]).
    Text,
    /// A cchist backup of the transcript or of a sub-agent (`*.cchist-bak.*`): a copy of the
    /// session that undo may restore, so it is redacted with it and otherwise left as it was.
    Backup,
}

impl Part {
    /// True for the transcripts a full pipeline runs over (the others only get redacted).
    pub fn is_transcript(self) -> bool {
        matches!(self, Part::Main | Part::Subagent)
    }

    /// What a file of this part is, in a few words for a message.
    pub fn name(self) -> &'static str {
        match self {
            Part::Main => "a session's transcript",
            Part::Subagent => "a sub-agent's transcript",
            Part::Document => "a companion JSON document",
            Part::Text => "a companion file",
            Part::Backup => "a cchist backup",
        }
    }

    /// How a pipeline runs a file of this part.
    pub fn treatment(self) -> Treatment {
        match self {
            Part::Main | Part::Subagent => Treatment::Records,
            Part::Text => Treatment::Text,
            Part::Document | Part::Backup => Treatment::Copy,
        }
    }

    /// The part of a file named `name` in the folder named `dir`, of a session's companion
    /// folder when `companion`: the one rule every classification goes by.
    fn of_name(name: &str, dir: Option<&std::ffi::OsStr>, companion: bool) -> Part {
        if name.contains(BACKUP_MARK) {
            Part::Backup
        } else if name.ends_with(".json") {
            Part::Document
        } else if name.ends_with(".jsonl") {
            // In a companion folder only `subagents/` holds transcripts: a `.jsonl` under
            // `tool-results/` is a tool's output, text like the others there.
            if !companion {
                Part::Main
            } else if dir.is_some_and(|d| d == "subagents") {
                Part::Subagent
            } else {
                Part::Text
            }
        } else {
            Part::Text
        }
    }
}

/// What a file is and whose: its [`Part`] and the session it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// What part of its session it is.
    pub part: Part,
    /// The session (for a file that belongs to none, the file taken as one).
    pub session: SessionFile,
}

/// The one classifier of session files, by Claude Code's layout: any file at any depth under
/// `<project>/<id>/` (a sub-agent, a tool result, a nested companion, their backups) belongs to
/// `<project>/<id>.jsonl` when that exists; a cchist backup (`<id>.jsonl.cchist-bak.<time>`)
/// to the file it copies; any other file stands for itself.
pub fn classify(path: &Path) -> Place {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = path.parent().and_then(Path::file_name);
    for d in path.ancestors().skip(1).take(4) {
        if d.file_name().is_some() {
            let main = d.with_extension("jsonl");
            if main != path && main.is_file() {
                return Place {
                    part: Part::of_name(&name, dir, true),
                    session: SessionFile::from_path(&main),
                };
            }
        }
    }
    let part = Part::of_name(&name, dir, false);
    if let Some((main, _)) = name.split_once(BACKUP_MARK) {
        let session = path.with_file_name(main);
        if session.is_file() {
            return Place {
                part,
                session: SessionFile::from_path(&session),
            };
        }
    }
    Place {
        part,
        session: SessionFile::from_path(path),
    }
}

/// The input for the file at `path` (`rel` to the argument it was found under), classified.
pub fn input(path: PathBuf, rel: PathBuf) -> Input {
    let place = classify(&path);
    Input::File {
        treatment: place.part.treatment(),
        session: place.session.path,
        path,
        rel,
    }
}

/// The input for `m`, a member of `session` (already classified by [`SessionFile::members`]).
pub fn member_input(m: Member, rel: PathBuf, session: &SessionFile) -> Input {
    Input::File {
        treatment: m.part.treatment(),
        session: session.path.clone(),
        path: m.path,
        rel,
    }
}

/// One file of a session.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// Where it is.
    pub path: PathBuf,
    /// What it is.
    pub part: Part,
}

impl SessionFile {
    /// The session a transcript path names: id from the file stem, project from its folder.
    pub fn from_path(path: &Path) -> SessionFile {
        SessionFile {
            id: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: path.to_path_buf(),
            project_dir: path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| ".".into(), Into::into),
        }
    }

    /// The main session a file under `projects` belongs to: `<p>/<id>.jsonl` itself, one of
    /// its backups, or a file in its companion folder (`<p>/<id>/subagents/…`,
    /// `<p>/<id>/tool-results/…`).
    pub fn owning(projects: &Path, path: &Path) -> Option<SessionFile> {
        let s = classify(path).session;
        (s.project_dir.parent() == Some(projects) && s.path.is_file()).then_some(s)
    }

    /// The session's companion folder (`subagents/`, `tool-results/`), which may not exist.
    pub fn companion_dir(&self) -> PathBuf {
        self.path.with_extension("")
    }

    /// The companion folder when it is a symbolic link (to anywhere): it is not followed, so
    /// none of its files are members. Callers say so ([`crate::claude::walk::expand_sessions`],
    /// the hooks' fence) rather than leave it out silently.
    pub fn linked_companion(&self) -> Option<PathBuf> {
        let dir = self.companion_dir();
        std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.file_type().is_symlink())
            .then_some(dir)
    }

    /// The links that stand for files of this session and are not followed: the companion
    /// folder itself when it is one ([`SessionFile::linked_companion`]), else every link
    /// under it (a linked `tool-results/*.txt`, `subagents/*.jsonl` or sub-folder), sorted.
    /// [`SessionFile::members`] leaves them out; a caller that reads or writes the session
    /// lists them as skipped ([`crate::claude::walk::expand_sessions`], the hooks' fence), so a
    /// scan that did not look at them never passes as complete.
    pub fn linked_members(&self) -> Vec<PathBuf> {
        if let Some(dir) = self.linked_companion() {
            return vec![dir];
        }
        let (mut files, mut links) = (Vec::new(), Vec::new());
        collect_companions(&self.companion_dir(), &mut files, &mut links);
        links.sort();
        links
    }

    /// Every file that makes up this session, main transcript first, then the companion
    /// folder's files and the backups, each sorted by path. This is the one answer to "which
    /// files are this session" for every command that reads, transforms, copies, forks,
    /// backs up or restores one. Links are never followed; a linked member is left out, and
    /// so is everything under a companion folder that is itself a link
    /// ([`SessionFile::linked_companion`]): an in-place write would go through it to wherever
    /// it points.
    pub fn members(&self) -> Vec<Member> {
        let mut v = vec![Member {
            path: self.path.clone(),
            part: Part::Main,
        }];
        v.extend(backups(&self.path).into_iter().map(|path| Member {
            path,
            part: Part::Backup,
        }));
        // The transcript's other copies beside it (undo's `.cchist-undone.*`, `--backup=SUFFIX`
        // copies) hold the session as it was too. Those of companions are companion files.
        v.extend(
            copies(&self.path)
                .into_iter()
                .filter(|p| crate::io::backup::is_copy(p))
                .map(|path| Member {
                    path,
                    part: Part::Backup,
                }),
        );
        let mut companions = Vec::new();
        if self.linked_companion().is_none() {
            collect_companions(&self.companion_dir(), &mut companions, &mut Vec::new());
        }
        companions.sort();
        for c in companions {
            v.extend(backups(&c.path).into_iter().map(|path| Member {
                path,
                part: Part::Backup,
            }));
            v.push(c);
        }
        v
    }
}

/// The regular files under a companion folder, classified; backups are listed by their
/// transcript, and cchist's temp files are not members. Links (to files or folders) are not
/// followed: they go to `links`.
fn collect_companions(dir: &Path, out: &mut Vec<Member>, links: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if ft.is_symlink() {
            if !is_temp_name(&name) {
                links.push(path);
            }
            continue;
        }
        if ft.is_dir() {
            collect_companions(&path, out, links);
            continue;
        }
        if !ft.is_file() || name.contains(BACKUP_MARK) || is_temp_name(&name) {
            continue;
        }
        let part = Part::of_name(&name, dir.file_name(), true);
        out.push(Member { path, part });
    }
}

/// Every main session under `projects`, sorted by project folder then id. Sub-agent files
/// (`agent-*.jsonl`) are not sessions of their own.
pub fn list_sessions(projects: &Path) -> Result<Vec<SessionFile>> {
    let origin = Origin::file(projects);
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(projects) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(&origin, "read directory", e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(&origin, "read directory", e))?;
        let ft = entry
            .file_type()
            .map_err(|e| Error::io(&origin, "stat", e))?;
        if !ft.is_dir() {
            continue;
        }
        out.extend(sessions_in(&entry.path())?);
    }
    out.sort();
    Ok(out)
}

/// The main sessions directly inside one project folder.
pub fn sessions_in(project_dir: &Path) -> Result<Vec<SessionFile>> {
    let origin = Origin::file(project_dir);
    let mut out = Vec::new();
    for entry in
        std::fs::read_dir(project_dir).map_err(|e| Error::io(&origin, "read directory", e))?
    {
        let entry = entry.map_err(|e| Error::io(&origin, "read directory", e))?;
        let path = entry.path();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !is_file
            || !name.ends_with(".jsonl")
            || name.starts_with("agent-")
            || name.starts_with('.')
        {
            continue;
        }
        out.push(SessionFile::from_path(&path));
    }
    out.sort();
    Ok(out)
}

/// Find a session by id or unique id prefix.
pub fn find_by_id(projects: &Path, id: &str) -> Result<SessionFile> {
    let all = list_sessions(projects)?;
    let exact: Vec<&SessionFile> = all.iter().filter(|s| s.id == id).collect();
    match exact.as_slice() {
        [one] => return Ok((*one).clone()),
        [] => {}
        // A session copied into a second project (a moved checkout, a restored backup) has
        // its id twice: picking one would leave the other as it was, unsaid.
        many => {
            return Err(Error::Other(format!(
                "session `{id}` is ambiguous: {} projects hold it ({}); name the file instead (`cchist ls` lists them)",
                many.len(),
                many.iter()
                    .map(|s| s.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
    let matches: Vec<_> = all.into_iter().filter(|s| s.id.starts_with(id)).collect();
    match matches.len() {
        1 => Ok(matches.into_iter().next().expect("one")),
        0 => Err(Error::Other(format!(
            "no session `{id}` under {}; `cchist ls` lists the sessions there (set CLAUDE_CONFIG_DIR for another config folder)",
            projects.display()
        ))),
        n => Err(Error::Other(format!(
            "session prefix `{id}` is ambiguous ({n} sessions match: {}…); give more characters",
            matches.iter().take(3).map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The most recently modified session of the project whose working directory is `cwd`.
/// Looks in the folder Claude Code would use; when that misses, scans every project for
/// sessions whose records carry that `cwd`.
pub fn latest_for_project(projects: &Path, cwd: &Path) -> Result<SessionFile> {
    if let Some(folder) = named_project_folder(projects, cwd) {
        return sessions_in(&folder)?
            .into_iter()
            .max_by_key(|s| std::fs::metadata(&s.path).and_then(|m| m.modified()).ok())
            .ok_or_else(|| Error::Other(format!("no session in {}", folder.display())));
    }
    let cwd = &std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let cwd_str = cwd.to_string_lossy();
    let folder = projects.join(project_folder_name(&cwd_str));
    let mut candidates = if folder.is_dir() {
        sessions_in(&folder)?
    } else {
        Vec::new()
    };
    if candidates.is_empty() {
        candidates = list_sessions(projects)?
            .into_iter()
            .filter(|s| first_cwd(&s.path).as_deref() == Some(&*cwd_str))
            .collect();
    }
    candidates
        .into_iter()
        .max_by_key(|s| std::fs::metadata(&s.path).and_then(|m| m.modified()).ok())
        .ok_or_else(|| {
            Error::Other(format!(
                "no session for project {} under {}",
                cwd.display(),
                projects.display()
            ))
        })
}

/// The project folder `spec` names as a folder of `projects`: by its name
/// (`-home-dev-webapp`, as Claude Code spells the working directory) or by its path. `None`
/// when it names none (then it is a working directory, see [`latest_for_project`]).
pub fn named_project_folder(projects: &Path, spec: &Path) -> Option<PathBuf> {
    let mut comps = spec.components();
    if let (Some(std::path::Component::Normal(name)), None) = (comps.next(), comps.next()) {
        let d = projects.join(name);
        if d.is_dir() {
            return Some(d);
        }
    }
    if spec.is_dir() {
        let (Ok(d), Ok(p)) = (spec.canonicalize(), projects.canonicalize()) else {
            return None;
        };
        if d.parent() == Some(p.as_path()) {
            return Some(projects.join(d.file_name()?));
        }
    }
    None
}

/// The first `cwd` recorded in a transcript (the project path).
pub fn first_cwd(path: &Path) -> Option<String> {
    let f = crate::io::input::open(path).ok()?;
    for l in crate::io::framing::lines(&f.data, 1) {
        if memchr::memmem::find(l.body, b"\"cwd\"").is_none() {
            continue;
        }
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(l.body) {
            if let Some(c) = v.get("cwd").and_then(|c| c.as_str()) {
                return Some(c.to_string());
            }
        }
    }
    None
}

/// How recently a session must have been written to count as live.
pub const LIVE_WINDOW: Duration = Duration::from_secs(60);

/// Why a session looks live, if it does: written in the last minute, or held open (or named
/// on the command line) by a running `claude` process. A modification time in the future
/// (clocks out of step, a file from a machine ahead of this one) says nothing about how long
/// ago it was written, so it counts as live too: taking it for idle would let an edit race the
/// writer.
pub fn liveness(s: &SessionFile) -> Option<String> {
    if let Ok(m) = std::fs::metadata(&s.path).and_then(|m| m.modified()) {
        match SystemTime::now().duration_since(m) {
            Ok(d) if d < LIVE_WINDOW => return Some("written in the last 60 s".into()),
            Ok(_) => {}
            Err(ahead) => {
                return Some(format!(
                    "modified {:.0} s in the future: the clock is off, so cchist cannot tell when it was last written",
                    ahead.duration().as_secs_f64().ceil()
                ))
            }
        }
    }
    claude_process_using(s).map(|pid| format!("in use by claude process {pid}"))
}

/// A running process named `claude` that holds the file open, or runs in the session's
/// project and names the session id.
fn claude_process_using(s: &SessionFile) -> Option<u32> {
    let canonical = std::fs::canonicalize(&s.path).ok()?;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let base = entry.path();
        let cmdline = std::fs::read(base.join("cmdline")).unwrap_or_default();
        let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
        let is_claude = Path::new(std::str::from_utf8(argv0).unwrap_or(""))
            .file_name()
            .is_some_and(|n| n == "claude");
        if !is_claude {
            continue;
        }
        // Named on its command line (`--resume <id>`) by a claude running in this project
        // (the same id may exist under another config folder).
        let same_project = std::fs::read_link(base.join("cwd")).is_ok_and(|cwd| {
            s.project_dir
                .file_name()
                .is_some_and(|n| *n == *project_folder_name(&cwd.to_string_lossy()))
        });
        if same_project && memchr::memmem::find(&cmdline, s.id.as_bytes()).is_some() {
            return Some(pid);
        }
        if let Ok(fds) = std::fs::read_dir(base.join("fd")) {
            for fd in fds.flatten() {
                if std::fs::read_link(fd.path()).is_ok_and(|t| t == canonical) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_match_claude_code() {
        assert_eq!(
            project_folder_name("/home/dev/p01_quickstart"),
            "-home-dev-p01-quickstart"
        );
        assert_eq!(project_folder_name("C:\\Users\\a\\x"), "C--Users-a-x");
        assert_eq!(project_folder_name("/a/😀"), "-a---");
        let long = format!("/{}", "x".repeat(300));
        let n = project_folder_name(&long);
        assert!(n.starts_with(&format!("-{}", "x".repeat(199))));
        assert!(n.len() > 201 && n.as_bytes()[200] == b'-');
    }

    #[test]
    fn one_classifier_places_every_file_of_a_session() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("projects/-home-me");
        for f in [
            "s.jsonl",
            "s.jsonl.cchist-bak.20260101T000000Z",
            "s/subagents/agent-1.jsonl",
            "s/subagents/agent-1.meta.json",
            "s/tool-results/t.txt",
            "s/tool-results/t.jsonl",
            "lone.jsonl",
        ] {
            let path = p.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "{}\n").unwrap();
        }
        let main = p.join("s.jsonl");
        let of = |f: &str| {
            let place = classify(&p.join(f));
            (place.part, place.session.path)
        };
        assert_eq!(of("s.jsonl"), (Part::Main, main.clone()));
        let bak = "s.jsonl.cchist-bak.20260101T000000Z";
        assert_eq!(of(bak), (Part::Backup, main.clone()));
        assert_eq!(
            of("s/subagents/agent-1.jsonl"),
            (Part::Subagent, main.clone())
        );
        let meta = "s/subagents/agent-1.meta.json";
        assert_eq!(of(meta), (Part::Document, main.clone()));
        assert_eq!(of("s/tool-results/t.txt"), (Part::Text, main.clone()));
        assert_eq!(of("s/tool-results/t.jsonl"), (Part::Text, main.clone()));
        assert_eq!(of("lone.jsonl"), (Part::Main, p.join("lone.jsonl")));
        // The walk of a session's members agrees with the classifier, file by file.
        for m in SessionFile::from_path(&main).members() {
            assert_eq!(classify(&m.path).part, m.part, "{}", m.path.display());
        }
        let projects = d.path().join("projects");
        let owner = SessionFile::owning(&projects, &p.join("s/tool-results/t.jsonl"));
        assert_eq!(owner.map(|s| s.path), Some(main));
    }

    #[test]
    fn finds_sessions_by_prefix_and_skips_agents() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("projects/-home-me");
        std::fs::create_dir_all(&p).unwrap();
        for f in ["aaaa1111.jsonl", "aaab2222.jsonl", "agent-1.jsonl"] {
            std::fs::write(p.join(f), "{}\n").unwrap();
        }
        let root = d.path().join("projects");
        assert_eq!(list_sessions(&root).unwrap().len(), 2);
        assert_eq!(find_by_id(&root, "aaaa").unwrap().id, "aaaa1111");
        assert!(find_by_id(&root, "aaa")
            .unwrap_err()
            .to_string()
            .contains("ambiguous"));
        assert!(find_by_id(&root, "zz").is_err());
        // The same full id in a second project: refused as a prefix matching both would be.
        let q = d.path().join("projects/-home-you");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join("aaaa1111.jsonl"), "{}\n").unwrap();
        let e = find_by_id(&root, "aaaa1111").unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("-home-you"), "{e}");
        assert_eq!(find_by_id(&root, "aaab").unwrap().id, "aaab2222");
    }
}
