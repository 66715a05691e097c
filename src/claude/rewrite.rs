//! Writing an edited session safely: in place with a backup, or as a new session (`--fork`),
//! and undoing the last in-place edit.
//!
//! Claude Code keeps a running session in memory and appends to its file, so an in-place edit
//! of a live session only shows on the next resume and can break the chain the running process
//! appends to. A live session is therefore refused unless forced; `--fork` never touches the
//! original and prints the `claude --resume` line for the copy.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::claude::layout::{self, Part, SessionFile};
use crate::engine::pipeline::{FileReport, Pipeline};
use crate::engine::runner::{self, Mode};
use crate::error::{Error, Origin, Result};
use crate::io::backup::{self, backups, UNDONE_MARK};
use crate::io::input;
use crate::io::input::Treatment;
use crate::io::output::{Sink, SpanWriter};
use crate::io::replace::{self, Appended, Attrs, Owner, Replace};

/// How to write an edit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MutateOptions {
    /// Write a new session instead of changing this one.
    pub fork: bool,
    /// Only report.
    pub dry_run: bool,
    /// Edit even a session that looks live.
    pub force: bool,
}

/// What happened.
#[derive(Debug)]
pub enum Written {
    /// Nothing was written.
    DryRun,
    /// The session was replaced; the original is kept at `backup`.
    InPlace {
        /// The backup of the original.
        backup: PathBuf,
    },
    /// The output was already identical: nothing written.
    Unchanged,
    /// A new session was written.
    Forked {
        /// Its id.
        id: String,
        /// Its file.
        path: PathBuf,
        /// The binary companion files copied byte for byte (the pipeline cannot change them
        /// without breaking them): those in which no secret was found.
        binary: Vec<PathBuf>,
        /// The binary companion files left out of the fork, each with how many secrets it
        /// holds: a fork is meant to be clean, and cchist cannot redact them.
        left_out: Vec<(PathBuf, usize)>,
    },
}

/// Run `pipeline` over the session and write the result as `opts` says.
pub fn mutate(
    s: &SessionFile,
    pipeline: &Pipeline,
    opts: MutateOptions,
) -> Result<(FileReport, Written)> {
    let origin = Origin::file(&s.path);
    if !opts.fork && !opts.dry_run && !opts.force {
        if let Some(why) = layout::liveness(s) {
            return Err(Error::Other(format!(
                "{}: the session looks live ({why}); edit a copy with --fork (then `claude --resume <new id>`), or pass --force once it is idle",
                s.path.display()
            )));
        }
    }
    if !opts.fork && !opts.dry_run {
        // The runner's in-place protocol: fsync and backup before the last growth check,
        // then rename, then carry over anything appended in between. The mtime is kept:
        // Claude Code's cleanup goes by it, and a fresh one would make the session look live.
        let suffix = backup::fresh_suffix(&s.path);
        let mode = Mode::InPlace {
            backup: Some(suffix.clone()),
            touch: false,
            break_links: false,
        };
        let rel = s.path.file_name().map(Into::into).unwrap_or_default();
        let input = layout::input(s.path.clone(), rel);
        let report = runner::run_one(pipeline, &input, &mode)?;
        if !report.changed {
            return Ok((report, Written::Unchanged));
        }
        // The runner recorded what it wrote beside the backup (an undoable suffix).
        let backup = backup::name_of(&s.path, &suffix);
        return Ok((report, Written::InPlace { backup }));
    }
    let f = input::open(&s.path)?;
    let mut out = Vec::with_capacity(f.data.len());
    let mut sink = SpanWriter::new(&mut out);
    // The fork carries the session's other files too: what any of them shows is known in all.
    let known = session_known(s, pipeline);
    let report = pipeline
        .run_buffer_known(&f.data, &origin, &mut sink, false, &known)?
        .0;
    sink.finish().map_err(|e| Error::io(&origin, "write", e))?;
    drop(sink);
    if opts.dry_run {
        return Ok((report, Written::DryRun));
    }
    let (id, path, binary, left_out) = fork(s, &out, pipeline, &known)?;
    Ok((
        report,
        Written::Forked {
            id,
            path,
            binary,
            left_out,
        },
    ))
}

/// What the files of session `s` (backups aside) show of secrets, together.
fn session_known(s: &SessionFile, pipeline: &Pipeline) -> crate::stages::redact::known::Known {
    let members: Vec<layout::Member> = s
        .members()
        .into_iter()
        .filter(|m| m.part != Part::Backup && !backup::is_copy(&m.path))
        .collect();
    if members.len() < 2 {
        return Default::default();
    }
    let files: Vec<(&Path, Treatment)> = members
        .iter()
        .map(|m| (m.path.as_path(), m.part.treatment()))
        .collect();
    runner::known_of_files(pipeline, &files)
}

/// Replace `to` (whose content was read, under its lock, as `was`) by a copy of `from`,
/// atomically, with `from`'s mode and mtime. The copy is locked before it takes the name, and
/// an append that landed since `was` was read fails the restore instead of being lost.
fn restore_from(from: &Path, to: &Path, was: &input::InputFile) -> Result<()> {
    let o = Origin::file(to);
    let meta = std::fs::metadata(from).map_err(|e| Error::io(&Origin::file(from), "stat", e))?;
    let data = std::fs::read(from).map_err(|e| Error::io(&Origin::file(from), "read", e))?;
    let mut tmp = replace::temp(to).map_err(|e| Error::io(&o, "create", e))?;
    std::io::Write::write_all(&mut tmp, &data).map_err(|e| Error::io(&o, "write", e))?;
    let how = Replace {
        backup: None,
        record: false,
        mode: meta.mode(),
        mtime: meta.modified().ok(),
        owner: Owner::Try,
        appended: Appended::Ignore,
    };
    replace::commit(to, was, tmp, how).map(drop)
}

/// Restore the newest backup of a session (atomically) and remove it; returns its path.
///
/// Refused when the session changed since the edit that left the backup (the restore would
/// drop what was added since, e.g. the turns of a resumed session), unless `force`; a forced
/// undo keeps what it replaces as `<session>.jsonl.cchist-undone.<stamp>`.
pub fn undo(s: &SessionFile, force: bool) -> Result<PathBuf> {
    let Some(latest) = backups(&s.path).pop() else {
        return Err(Error::Other(format!(
            "{}: no cchist backup to restore (backups are written by in-place history edits)",
            s.path.display()
        )));
    };
    if !force {
        if let Some(why) = layout::liveness(s) {
            return Err(Error::Other(format!(
                "{}: the session looks live ({why}); pass --force once it is idle",
                s.path.display()
            )));
        }
    }
    // Where a renamed companion goes back to, checked before anything changes.
    let renamed = backup::renamed_from(&latest)?;
    let origin = Origin::file(&s.path);
    let locked = crate::io::lock::lock_path(&s.path, crate::io::lock::wait_bound()?)?;
    let current = input::read_locked(locked, &origin)?;
    let change = backup::change_since(&latest, &current.data);
    if let Some(what) = &change {
        if !force {
            return Err(Error::Other(format!(
                "{}: changed since the edit that left {}: {what}. Restoring would lose that; it was left untouched — pass --force to restore anyway (the current file is kept as {}<stamp>)",
                s.path.display(),
                latest.display(),
                UNDONE_MARK
            )));
        }
        let keep = backup::name_of(
            &s.path,
            &backup::suffix_at(UNDONE_MARK, std::time::SystemTime::now()),
        );
        let attrs = Attrs {
            mode: current.meta.mode(),
            mtime: current.meta.modified().ok(),
            owner: None,
        };
        replace::write_file(&keep, &current.data, &attrs)?;
        let msg = format!(
            "cchist: {}: {what}; the replaced content is kept as {}",
            s.path.display(),
            keep.display()
        );
        eprintln!("{}", crate::findings::report::printable_text(&msg));
    }
    restore_from(&latest, &s.path, &current)?;
    drop(current);
    // A companion the edit renamed (its name read as a secret) takes its name back, unless
    // another file has taken it since.
    // The placeholder's folder a companion moved back out of, removed once its backup is.
    let mut left_dir: Option<(PathBuf, PathBuf)> = None;
    if let Some(from) = renamed {
        let shown = |p: &Path| crate::findings::report::shown_name(&p.display().to_string());
        // Moved out of a folder named after a secret: back into it, made again (owner-only)
        // when the edit removed it, the placeholder's folder removed once empty.
        let (to_dir, from_dir) = (
            s.path.parent().unwrap_or(Path::new("")),
            from.parent().unwrap_or(Path::new("")),
        );
        let common = to_dir
            .ancestors()
            .find(|a| from.starts_with(a))
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let made = if from_dir != to_dir {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(from_dir)
        } else {
            Ok(())
        };
        let left = match made.and_then(|()| replace::rename_new(&s.path, &from)) {
            Ok(true) => None,
            Ok(false) => Some("a file has taken its old name since".to_string()),
            Err(e) => Some(format!("it could not be renamed ({e})")),
        };
        if left.is_none() {
            if from_dir != to_dir {
                left_dir = Some((to_dir.to_path_buf(), common));
            }
            // The old name is not printed: it may hold a secret only the session's other
            // files show (a value a context rule found), which this process does not know.
            let msg = format!(
                "cchist: {}: renamed back to its name before the edit",
                shown(&s.path),
            );
            eprintln!("{}", crate::findings::report::printable_text(&msg));
        }
        if let Some(why) = left {
            return Err(Error::Other(format!(
                "{}: restored, but left under this name: {why}. Its old name (which holds a secret) is recorded beside {}; rename it yourself",
                shown(&s.path),
                shown(&latest)
            )));
        }
    }
    // Files the edit created beside the session (records it moved out) go with it.
    for left in backup::remove_created(&latest) {
        let msg = format!(
            "cchist: {}: created by the edit undone, changed since: left as it is",
            left.display()
        );
        eprintln!("{}", crate::findings::report::printable_text(&msg));
    }
    backup::remove(&latest)?;
    if let Some((dir, base)) = left_dir {
        runner::remove_empty_dirs(&dir, &base);
    }
    Ok(latest)
}

/// Write `bytes` as a new session beside `s`: fresh id in the file name and in every record's
/// `sessionId`, and every other member of the session ([`SessionFile::members`], backups
/// and undo copies aside: [`backup::is_copy`]) copied through the pipeline: sub-agent
/// transcripts through all of it, JSON documents through the stages that apply to copies, text
/// through the text stages — so a redacting pipeline never copies a secret into the fork.
/// A binary file the pipeline cannot change is copied as it is only when no secret was found
/// in it; one holding secrets is left out. Returns the new id, its file, the binary files
/// copied as they are, and those left out (with how many secrets each holds).
#[allow(clippy::type_complexity)]
fn fork(
    s: &SessionFile,
    bytes: &[u8],
    pipeline: &Pipeline,
    known: &crate::stages::redact::known::Known,
) -> Result<(String, PathBuf, Vec<PathBuf>, Vec<(PathBuf, usize)>)> {
    let id = uuid::Uuid::new_v4().to_string();
    let old_ids = session_ids(bytes, &s.id);
    let path = s.project_dir.join(format!("{id}.jsonl"));
    write_new(&path, &rewrite_session_id(bytes, &old_ids, &id), &s.path)?;
    let comp = s.companion_dir();
    let new_comp = s.project_dir.join(&id);
    let (mut binary, mut left_out) = (Vec::new(), Vec::new());
    for m in s.members() {
        let Ok(rel) = m.path.strip_prefix(&comp) else {
            continue; // the transcript itself and its backups
        };
        if m.part == Part::Backup || backup::is_copy(&m.path) {
            continue;
        }
        let origin = Origin::file(&m.path);
        let data = std::fs::read(&m.path).map_err(|e| Error::io(&origin, "read", e))?;
        let data = match m.part.treatment() {
            Treatment::Records => {
                let mut out = Vec::with_capacity(data.len());
                let mut sink = SpanWriter::new(&mut out);
                pipeline.run_buffer_known(&data, &origin, &mut sink, false, known)?;
                drop(sink);
                rewrite_session_id(&out, &old_ids, &id)
            }
            t => {
                let (new, r) = if t == Treatment::Copy {
                    pipeline.run_copy_known(&data, &origin, known)?
                } else {
                    pipeline.run_text_known(&data, &origin, known)?
                };
                if r.counters
                    .contains_key(crate::engine::pipeline::BINARY_SKIPPED)
                {
                    if !r.findings.is_empty() {
                        left_out.push((m.path.clone(), r.findings.len()));
                        continue;
                    }
                    binary.push(m.path.clone());
                }
                new.unwrap_or(data)
            }
        };
        let mut dest = new_comp.join(rel);
        // A name that reads as a secret (the file's, a folder's it is in; by the rules or
        // what the session knows) is not copied into the fork: it takes its placeholder.
        let inp = input::Input::File {
            path: m.path.clone(),
            rel: rel.to_path_buf(),
            treatment: m.part.treatment(),
            session: s.path.clone(),
        };
        if let Some((below, at)) = runner::placeholder_rel(pipeline, &inp, known) {
            dest = new_comp.join(below);
            let safe = dest
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            dest = runner::free_name(&dest, &safe, at);
        }
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(&Origin::file(dir), "create directory", e))?;
        }
        write_new(&dest, &data, &m.path)?;
    }
    Ok((id, path, binary, left_out))
}

/// The session ids the records carry (normally one, equal to the file stem).
fn session_ids(bytes: &[u8], stem: &str) -> Vec<String> {
    let mut ids = vec![stem.to_string()];
    for l in crate::io::framing::lines(bytes, 1) {
        if let Some(h) = crate::transcript::record::Header::parse(l.body) {
            if let Some(sid) = h.session_id() {
                if !ids.iter().any(|i| i == sid) {
                    ids.push(sid.to_string());
                }
            }
        }
    }
    ids
}

/// Replace `"sessionId":"<old>"` by the new id, touching nothing else.
pub fn rewrite_session_id(bytes: &[u8], old: &[String], new: &str) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for o in old {
        let from = format!("\"sessionId\":\"{o}\"");
        let to = format!("\"sessionId\":\"{new}\"");
        out = replace_all(&out, from.as_bytes(), to.as_bytes());
    }
    out
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut last = 0;
    for i in memchr::memmem::find_iter(hay, from) {
        out.extend_from_slice(&hay[last..i]);
        out.extend_from_slice(to);
        last = i + from.len();
    }
    out.extend_from_slice(&hay[last..]);
    out
}

fn write_new(path: &Path, bytes: &[u8], like: &Path) -> Result<()> {
    let mode = std::fs::metadata(like).map(|m| m.mode()).unwrap_or(0o600);
    replace::write_file(path, bytes, &Attrs::mode(mode))
}
