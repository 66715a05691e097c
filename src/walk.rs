//! Turning path arguments into a sorted list of inputs.
//!
//! A file argument is taken as it is. A directory is walked for `*.jsonl` files, filtered by
//! `--include`/`--exclude` globs matched against the path relative to that directory. Links met
//! during a walk are never followed (a link inside `~/.claude/projects` may point anywhere);
//! they are listed as skipped so nothing disappears silently.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::{Error, Origin, Result};

/// One input to process.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A file, with the root it was found under (for `--out-dir` mirroring).
    File {
        /// The file.
        path: PathBuf,
        /// Path relative to the argument it came from (the file name for a file argument).
        rel: PathBuf,
    },
}

impl Input {
    /// Where this input comes from, for messages.
    pub fn origin(&self) -> Origin {
        match self {
            Input::Stdin => Origin::stdin(),
            Input::File { path, .. } => Origin::file(path),
        }
    }
}

/// The result of expanding path arguments.
#[derive(Debug, Default)]
pub struct Walk {
    /// Inputs to process, in a deterministic order.
    pub inputs: Vec<Input>,
    /// Paths passed over, with the reason (links, unreadable folders).
    pub skipped: Vec<(PathBuf, String)>,
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
        let glob = Glob::new(g).map_err(|e| Error::Other(format!("invalid glob `{g}`: {e}")))?;
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
            walk_dir(p, p, filters, &mut found, &mut walk.skipped)?;
            found.sort();
            walk.inputs.extend(found);
        } else {
            let rel = PathBuf::from(p.file_name().unwrap_or(p.as_os_str()));
            walk.inputs.push(Input::File {
                path: p.clone(),
                rel,
            });
        }
    }
    Ok(walk)
}

fn walk_dir(
    root: &Path,
    dir: &Path,
    filters: &Filters,
    found: &mut Vec<Input>,
    skipped: &mut Vec<(PathBuf, String)>,
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
            if let Err(e) = walk_dir(root, &path, filters, found, skipped) {
                skipped.push((path, e.to_string()));
            }
            continue;
        }
        if ft.is_file() && is_jsonl(&path) {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if filters.accepts(&rel) {
                found.push(Input::File { path, rel });
            }
        }
    }
    Ok(())
}

fn is_jsonl(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
        && !p
            .file_name()
            .is_some_and(|n| crate::output::is_temp_name(&n.to_string_lossy()))
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
}
