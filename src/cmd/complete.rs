//! Dynamic shell completion (`source <(COMPLETE=bash cchist)`): the values only the running
//! binary knows — the shipped pipeline names and the sessions under the config folder.

use clap_complete::engine::CompletionCandidate;

use cchist::claude::layout;
use cchist::engine::config::BUILTIN;

/// The shipped pipelines, then the `*.toml` files of the working directory.
pub fn pipelines() -> Vec<CompletionCandidate> {
    let mut out: Vec<CompletionCandidate> = BUILTIN
        .iter()
        .map(|(name, _)| CompletionCandidate::new(*name).help(Some("shipped pipeline".into())))
        .collect();
    if let Ok(rd) = std::fs::read_dir(".") {
        let mut files: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        files.sort();
        out.extend(files.into_iter().map(CompletionCandidate::new));
    }
    out
}

/// The sessions under the config folder, newest first, each with its project folder as help:
/// at most [`MAX_SESSIONS`] (a shell offers a list to read, not every session ever).
pub fn sessions() -> Vec<CompletionCandidate> {
    let Ok(root) = layout::config_root() else {
        return Vec::new();
    };
    let Ok(mut all) = layout::list_sessions(&layout::projects_dir(&root)) else {
        return Vec::new();
    };
    let mtime = |s: &layout::SessionFile| {
        std::fs::metadata(&s.path)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH)
    };
    all.sort_by_cached_key(|s| std::cmp::Reverse(mtime(s)));
    all.into_iter()
        .take(MAX_SESSIONS)
        .map(|s| {
            let project = s
                .project_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            CompletionCandidate::new(s.id).help(project.map(Into::into))
        })
        .collect()
}

/// Most sessions offered.
const MAX_SESSIONS: usize = 200;
