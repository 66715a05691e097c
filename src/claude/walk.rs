//! Turning path arguments into a sorted list of inputs.
//!
//! A file argument is taken as it is. A directory is walked for `*.jsonl` files, filtered by
//! `--include`/`--exclude` globs matched against the path relative to that directory. Links met
//! during a walk are never followed (a link inside `~/.claude/projects` may point anywhere);
//! they are listed as skipped so nothing disappears silently.

use std::path::{Path, PathBuf};

use globset::{GlobSet, GlobSetBuilder};

use crate::claude::layout::{self, SessionFile};
use crate::error::{Error, Origin, Result};
use crate::io::input::{Input, Treatment};

/// The result of expanding path arguments.
#[derive(Debug, Default)]
pub struct Walk {
    /// Inputs to process, in a deterministic order.
    pub inputs: Vec<Input>,
    /// Paths passed over, with the reason (links, unreadable folders).
    pub skipped: Vec<(PathBuf, String)>,
    /// cchist temp files met: every one in a walked folder, and those of a file argument in
    /// its folder (see [`crate::io::output::remove_leftovers`]).
    pub leftovers: Vec<PathBuf>,
    /// Inputs dropped because an earlier one is the same file (same device and inode: the
    /// same path twice, overlapping folders, another name): each with the one kept.
    pub duplicates: Vec<(PathBuf, PathBuf)>,
}

/// Include/exclude filters.
pub struct Filters {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl Filters {
    /// Build from glob strings (`**/subagents/*.jsonl`).
    pub fn new(include: &[String], exclude: &[String]) -> Result<Filters> {
        Ok(Filters {
            include: build_set(include)?,
            exclude: build_set(exclude)?,
        })
    }

    fn accepts(&self, rel: &Path) -> bool {
        if let Some(inc) = &self.include {
            if !inc.is_match(rel) {
                return false;
            }
        }
        !self.exclude.as_ref().is_some_and(|e| e.is_match(rel))
    }
}

fn build_set(globs: &[String]) -> Result<Option<GlobSet>> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        // As in rg and fd: `*` stops at `/`, and a glob without a `/` matches a file's name
        // at any depth (gitignore's rule), one with a `/` the path relative to the folder.
        let anchored = if g.contains('/') {
            g.clone()
        } else {
            format!("**/{g}")
        };
        let glob = globset::GlobBuilder::new(&anchored)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::Other(format!("invalid glob `{g}`: {e}")))?;
        b.add(glob);
    }
    b.build()
        .map(Some)
        .map_err(|e| Error::Other(format!("invalid glob set: {e}")))
}

/// Expand `paths` (none or `-` = stdin) into inputs.
pub fn expand(paths: &[PathBuf], filters: &Filters) -> Result<Walk> {
    let mut walk = Walk::default();
    if paths.is_empty() {
        walk.inputs.push(Input::Stdin);
        return Ok(walk);
    }
    for p in paths {
        if p.as_os_str() == "-" {
            walk.inputs.push(Input::Stdin);
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::io(&Origin::file(p), "stat", e))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk_dir(
                p,
                p,
                filters,
                &mut found,
                &mut walk.skipped,
                &mut walk.leftovers,
            )?;
            found.sort();
            walk.inputs.extend(found);
        } else {
            let rel = PathBuf::from(p.file_name().unwrap_or(p.as_os_str()));
            walk.inputs.push(layout::input(p.clone(), rel));
        }
    }
    dedupe(&mut walk);
    temp_files_of_args(paths, &mut walk.leftovers);
    walk.leftovers.sort();
    walk.leftovers.dedup();
    Ok(walk)
}

/// Keep the first of inputs that are the same file (device and inode), so a pipeline never
/// runs twice over one file in a run (and a backup holds the original, not a first pass).
pub fn dedupe(walk: &mut Walk) {
    use std::os::unix::fs::MetadataExt;
    let mut seen: std::collections::HashMap<(u64, u64), PathBuf> = Default::default();
    let dups = &mut walk.duplicates;
    walk.inputs.retain(|inp| {
        let Input::File { path, .. } = inp else {
            return true;
        };
        let Ok(m) = std::fs::metadata(path) else {
            return true;
        };
        match seen.entry((m.dev(), m.ino())) {
            std::collections::hash_map::Entry::Occupied(first) => {
                dups.push((path.clone(), first.get().clone()));
                false
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(path.clone());
                true
            }
        }
    });
}

/// The temp files (`.<name>.cchist-tmp.<pid>.<n>`, `.<name><backup suffix>.cchist-tmp.…`) of
/// the file arguments, found in their folders (each folder read once).
fn temp_files_of_args(paths: &[PathBuf], out: &mut Vec<PathBuf>) {
    let mut by_dir: std::collections::BTreeMap<&Path, std::collections::HashSet<&str>> =
        Default::default();
    for p in paths {
        if p.as_os_str() == "-" || p.is_dir() {
            continue;
        }
        if let Some(name) = p.file_name().and_then(|n| n.to_str()) {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            by_dir.entry(dir).or_default().insert(name);
        }
    }
    for (dir, names) in by_dir {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let n = e.file_name();
            let is_ours = n
                .to_str()
                .and_then(crate::io::output::parse_temp_name)
                // `<name><suffix>` too: a backup staged by a killed `--backup` run.
                .is_some_and(|(target, _, _)| names.iter().any(|n| target.starts_with(n)));
            if is_ours && e.file_type().is_ok_and(|t| t.is_file()) {
                out.push(dir.join(&n));
            }
        }
    }
}

fn walk_dir(
    root: &Path,
    dir: &Path,
    filters: &Filters,
    found: &mut Vec<Input>,
    skipped: &mut Vec<(PathBuf, String)>,
    leftovers: &mut Vec<PathBuf>,
) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(&Origin::file(dir), "read directory", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&Origin::file(dir), "read directory", e))?;
        let path = entry.path();
        let ft = match entry.file_type() {
            Ok(ft) => ft,
            Err(e) => {
                skipped.push((path, format!("cannot stat: {e}")));
                continue;
            }
        };
        if ft.is_symlink() {
            if is_jsonl(&path) || std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                skipped.push((path, "symbolic link (not followed)".into()));
            }
            continue;
        }
        if ft.is_dir() {
            if let Err(e) = walk_dir(root, &path, filters, found, skipped, leftovers) {
                skipped.push((path, e.to_string()));
            }
            continue;
        }
        if ft.is_file()
            && entry
                .file_name()
                .to_str()
                .and_then(crate::io::output::parse_temp_name)
                .is_some()
        {
            leftovers.push(path);
            continue;
        }
        if ft.is_file() && is_jsonl(&path) {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if filters.accepts(&rel) {
                found.push(layout::input(path, rel));
            }
        }
    }
    Ok(())
}

/// Add every other file of each session named among `inputs` (its sub-agents, their metadata,
/// `tool-results/`, cchist's backups: [`SessionFile::members`]) right after its transcript,
/// each file once. A command that changes sessions in place, into a folder or as a dry run
/// handles whole sessions this way, whichever argument named them; writing to stdout keeps to
/// the files named. A companion folder that is a symbolic link is not followed (an in-place
/// write would go through it to wherever it points): it is added to `skipped`, once.
pub fn expand_sessions(inputs: Vec<Input>, skipped: &mut Vec<(PathBuf, String)>) -> Vec<Input> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(inputs.len());
    for inp in inputs {
        let Input::File {
            path,
            rel,
            treatment,
            session,
        } = &inp
        else {
            out.push(inp);
            continue;
        };
        if !seen.insert(path.clone()) {
            continue;
        }
        // A session's own transcript brings its members (the classifier's answer, not a
        // second look at the name).
        let is_main = *treatment == Treatment::Records && session == path;
        let s = SessionFile::from_path(path);
        let members = if is_main {
            let folder = s.linked_companion().is_some();
            for link in s.linked_members() {
                if !skipped.iter().any(|(p, _)| *p == link) {
                    let why = if folder {
                        "the session's companion folder is a symbolic link (not followed; what it points to is left as it is)"
                    } else {
                        "a file of the session that is a symbolic link (not followed; what it points to is left as it is)"
                    };
                    skipped.push((link, why.into()));
                }
            }
            s.members()
        } else {
            Vec::new()
        };
        let base_rel = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        out.push(inp);
        for m in members.into_iter().skip(1) {
            if seen.insert(m.path.clone()) {
                let rel = base_rel.join(m.path.strip_prefix(&base).unwrap_or(&m.path));
                out.push(layout::member_input(m, rel, &s));
            }
        }
    }
    out
}

fn is_jsonl(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
        && !p
            .file_name()
            .is_some_and(|n| crate::io::output::is_temp_name(&n.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_sorted_filters_and_skips_links() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("p/s/subagents")).unwrap();
        for f in [
            "p/b.jsonl",
            "p/a.jsonl",
            "p/s/subagents/agent-1.jsonl",
            "p/x.txt",
        ] {
            std::fs::write(root.join(f), "{}\n").unwrap();
        }
        std::os::unix::fs::symlink("/etc/passwd", root.join("p/link.jsonl")).unwrap();
        let all = expand(&[root.to_path_buf()], &Filters::new(&[], &[]).unwrap()).unwrap();
        let rels: Vec<_> = all
            .inputs
            .iter()
            .map(|i| match i {
                Input::File { rel, .. } => rel.to_string_lossy().into_owned(),
                Input::Stdin => "-".into(),
            })
            .collect();
        assert_eq!(
            rels,
            vec!["p/a.jsonl", "p/b.jsonl", "p/s/subagents/agent-1.jsonl"]
        );
        assert_eq!(all.skipped.len(), 1);
        let no_sub = expand(
            &[root.to_path_buf()],
            &Filters::new(&[], &["**/subagents/**".into()]).unwrap(),
        )
        .unwrap();
        assert_eq!(no_sub.inputs.len(), 2);
    }

    #[test]
    fn finds_temp_files_in_walked_folders_and_beside_file_arguments() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("p/q")).unwrap();
        for f in [
            "p/a.jsonl",
            "p/.a.jsonl.cchist-tmp.12.0",
            "p/q/.b.jsonl.cchist-tmp.12.1",
            "p/.a.jsonl.cchist-tmp.12.x",
            "p/q/.c.jsonl.cchist-tmp.9.9",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let none = Filters::new(&[], &[]).unwrap();
        let w = expand(&[root.join("p")], &none).unwrap();
        let names: Vec<_> = w
            .leftovers
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec![
                "p/.a.jsonl.cchist-tmp.12.0",
                "p/q/.b.jsonl.cchist-tmp.12.1",
                "p/q/.c.jsonl.cchist-tmp.9.9"
            ]
        );
        // a file argument: only its own temp files
        let w = expand(&[root.join("p/a.jsonl")], &none).unwrap();
        assert_eq!(w.leftovers, vec![root.join("p/.a.jsonl.cchist-tmp.12.0")]);
    }
}
