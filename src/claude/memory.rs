//! Project memory: the compaction summaries `cchist hook` saves at PostCompact, under
//! `$CLAUDE_CONFIG_DIR/cchist/memory/<project folder>/<stamp>-<session>.md` (the project
//! folder as named under `projects/`; the stamp sorts in time order). Only redacted text is
//! given to [`save`]; the newest `keep` files of a project are kept.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Origin, Result};

/// The memory folder under the config root.
pub fn root_dir(config_root: &Path) -> PathBuf {
    config_root.join("cchist").join("memory")
}

/// One saved summary.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The project folder name (`-home-dev-app`).
    pub project: String,
    /// The session the summary is of.
    pub session: String,
    /// When it was saved (the file name's stamp).
    pub stamp: String,
    /// The file.
    pub path: PathBuf,
}

/// A name part Claude Code writes (project folders, session ids): no separators, no dots
/// that could climb out of the folder.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Save `text` as the memory of `project` from `session`, stamped `stamp`
/// ([`crate::io::clock::file_stamp`]); keep the project's newest `keep` files.
pub fn save(
    config_root: &Path,
    project: &str,
    session: &str,
    stamp: &str,
    text: &str,
    keep: usize,
) -> Result<PathBuf> {
    if !plain(project) || !plain(session) {
        return Err(Error::Other(format!(
            "project {project:?} or session {session:?} is not a name Claude Code writes; no memory saved"
        )));
    }
    let dir = root_dir(config_root).join(project);
    // cchist/, memory/ and the project's folder: never a link to somewhere else.
    let cchist = config_root.join("cchist");
    crate::claude::hook_log::refuse_links(&[&cchist, &root_dir(config_root), &dir])?;
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| Error::io(&Origin::file(&dir), "create directory", e))?;
    }
    let path = dir.join(format!("{stamp}-{session}.md"));
    let tmp = dir.join(format!(".{stamp}-{session}.md.tmp"));
    let o = Origin::file(&path);
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(|e| Error::io(&o, "open", e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(&o, "write", e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&o, "rename", e))?;
    // The prune removes only what it can see is a summary cchist saved: a regular file of one
    // name, mode 0600, this user's, in the real folder (checked above).
    let mut all: Vec<Entry> = list_project(config_root, project)
        .into_iter()
        .filter(|e| is_own(&e.path))
        .collect();
    if all.len() > keep {
        let old = all.len() - keep;
        for e in all.drain(..old) {
            let _ = std::fs::remove_file(e.path);
        }
    }
    Ok(path)
}

/// True for a file as [`save`] writes one: regular (not a link), one name, mode 0600, owned
/// by this user.
fn is_own(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.file_type().is_file()
            && m.nlink() == 1
            && m.mode() & 0o777 == 0o600
            // SAFETY: geteuid has no preconditions.
            && m.uid() == unsafe { libc::geteuid() }
    })
}

/// The saved summaries of `project`, oldest first.
pub fn list_project(config_root: &Path, project: &str) -> Vec<Entry> {
    let dir = root_dir(config_root).join(project);
    let mut v: Vec<Entry> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".md")?;
            let (stamp, session) = stem.split_once('-')?;
            (e.file_type().ok()?.is_file() && !name.starts_with('.')).then(|| Entry {
                project: project.to_string(),
                session: session.to_string(),
                stamp: stamp.to_string(),
                path: e.path(),
            })
        })
        .collect();
    v.sort_by(|a, b| (&a.stamp, &a.session).cmp(&(&b.stamp, &b.session)));
    v
}

/// Every saved summary, by project, oldest first.
pub fn list(config_root: &Path) -> Vec<Entry> {
    let mut projects: Vec<String> = std::fs::read_dir(root_dir(config_root))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    projects.sort();
    projects
        .iter()
        .flat_map(|p| list_project(config_root, p))
        .collect()
}

/// The newest summary saved from `session` of `project`.
pub fn latest_of(config_root: &Path, project: &str, session: &str) -> Option<Entry> {
    list_project(config_root, project)
        .into_iter()
        .rfind(|e| e.session == session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_lists_and_keeps_the_newest() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        for (i, s) in ["s-a", "s-b", "s-a"].iter().enumerate() {
            save(r, "-home-dev-app", s, &format!("2026010{i}T000000Z"), s, 2).unwrap();
        }
        let all = list(r);
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(all[0].session, "s-b");
        let latest = latest_of(r, "-home-dev-app", "s-a").unwrap();
        assert_eq!(latest.stamp, "20260102T000000Z");
        assert!(latest_of(r, "-home-dev-app", "s-c").is_none());
        assert!(save(r, "../x", "s", "t", "x", 2).is_err());
        assert!(save(r, "p", "a/b", "t", "x", 2).is_err());
    }
}
