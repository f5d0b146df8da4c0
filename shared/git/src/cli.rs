//! `CliGit`: the Git port over the `git` binary, one process per command. Output is read in
//! git's machine formats (`-z`, `--porcelain`, `%x1f`-separated fields) with `LC_ALL=C`, so a
//! path with spaces or a translated message cannot be misread.

use std::path::{Path, PathBuf};
use std::time::Duration;

use longrun_domain::repo::{CheckResult, may_remove_worktree};
use longrun_ports::git::{
    Commit, CommitId, DiffStat, FileStat, FileTree, Git, GitError, GitResult, MergeOutcome,
    StatusEntry,
};

use crate::process::{self, Output};

/// The identity of the commits the platform makes itself: an agent's leftovers, merges,
/// TASKLIST.md. Agents commit as whatever their CLI is set up as.
const NAME: &str = "longrun";
const EMAIL: &str = "longrun@localhost";

#[derive(Clone, Debug)]
pub struct CliGit {
    program: PathBuf,
    name: String,
    email: String,
}

impl Default for CliGit {
    fn default() -> Self {
        CliGit::new()
    }
}

impl CliGit {
    /// `git` from `PATH`, committing as `longrun <longrun@localhost>`.
    pub fn new() -> CliGit {
        CliGit {
            program: PathBuf::from("git"),
            name: NAME.into(),
            email: EMAIL.into(),
        }
    }

    pub fn with_identity(mut self, name: &str, email: &str) -> CliGit {
        self.name = name.into();
        self.email = email.into();
        self
    }

    pub fn with_program(mut self, program: impl Into<PathBuf>) -> CliGit {
        self.program = program.into();
        self
    }

    async fn raw(&self, dir: &Path, args: &[&str]) -> GitResult<Output> {
        let envs = [
            ("LC_ALL", "C"),
            ("GIT_TERMINAL_PROMPT", "0"),
            ("GIT_EDITOR", "true"),
            ("GIT_AUTHOR_NAME", self.name.as_str()),
            ("GIT_AUTHOR_EMAIL", self.email.as_str()),
            ("GIT_COMMITTER_NAME", self.name.as_str()),
            ("GIT_COMMITTER_EMAIL", self.email.as_str()),
        ];
        process::run(&self.program, dir, args, &envs).await
    }

    /// Runs git and returns its stdout; a non-zero exit becomes a classified error.
    async fn git(&self, dir: &Path, args: &[&str]) -> GitResult<String> {
        let out = self.raw(dir, args).await?;
        if out.ok() {
            Ok(out.stdout)
        } else {
            Err(classify(dir, args, &out.stderr))
        }
    }

    /// The commit `rev` names; `None` when it names none.
    async fn resolve(&self, repo: &Path, rev: &str) -> GitResult<Option<CommitId>> {
        check_rev(rev)?;
        let spec = format!("{rev}^{{commit}}");
        let out = self
            .raw(repo, &["rev-parse", "--verify", "--quiet", &spec])
            .await?;
        match out.code {
            Some(0) => Ok(Some(CommitId::new(out.stdout.trim()))),
            Some(1) if out.stderr.trim().is_empty() => Ok(None),
            _ => Err(classify(repo, &["rev-parse", rev], &out.stderr)),
        }
    }

    async fn must_resolve(&self, repo: &Path, rev: &str) -> GitResult<CommitId> {
        self.resolve(repo, rev)
            .await?
            .ok_or_else(|| GitError::UnknownRevision(rev.to_string()))
    }

    /// The worktrees git knows of `repo`: (path, head, branch).
    async fn worktrees(&self, repo: &Path) -> GitResult<Vec<(PathBuf, String, Option<String>)>> {
        let text = self
            .git(repo, &["worktree", "list", "--porcelain", "-z"])
            .await?;
        let mut out = Vec::new();
        let mut current: Option<(PathBuf, String, Option<String>)> = None;
        for field in text.split('\0') {
            if let Some(p) = field.strip_prefix("worktree ") {
                out.extend(current.take());
                current = Some((PathBuf::from(p), String::new(), None));
            } else if let (Some(h), Some(c)) = (field.strip_prefix("HEAD "), current.as_mut()) {
                c.1 = h.to_string();
            } else if let (Some(b), Some(c)) = (field.strip_prefix("branch "), current.as_mut()) {
                c.2 = Some(b.strip_prefix("refs/heads/").unwrap_or(b).to_string());
            }
        }
        out.extend(current);
        Ok(out)
    }

    async fn worktree_at(
        &self, repo: &Path, path: &Path,
    ) -> GitResult<Option<(String, Option<String>)>> {
        let want = canonical(path);
        Ok(self
            .worktrees(repo)
            .await?
            .into_iter()
            .find(|(p, _, _)| canonical(p) == want)
            .map(|(_, head, branch)| (head, branch)))
    }
}

#[async_trait::async_trait]
impl Git for CliGit {
    async fn head(&self, repo: &Path, branch: &str) -> GitResult<Option<CommitId>> {
        check_rev(branch)?;
        self.resolve(repo, &format!("refs/heads/{branch}")).await
    }

    async fn add_worktree(
        &self, repo: &Path, path: &Path, branch: &str, from: &CommitId,
    ) -> GitResult<()> {
        check_rev(branch)?;
        // A registered worktree whose folder was deleted by hand is made again below.
        if let Some((_, on)) = self
            .worktree_at(repo, path)
            .await?
            .filter(|_| path.exists())
        {
            return match on.as_deref() {
                Some(b) if b == branch => Ok(()),
                other => Err(GitError::Invalid(format!(
                    "worktree {} is on {:?}, not on {branch}",
                    path.display(),
                    other.unwrap_or("a detached head")
                ))),
            };
        }
        if path.exists()
            && path
                .read_dir()
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(GitError::Invalid(format!(
                "{} exists and is not a worktree of this repository",
                path.display()
            )));
        }
        // A worktree whose folder was deleted by hand is still registered: forget it first.
        self.git(repo, &["worktree", "prune"]).await?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| GitError::Io(format!("{}: {e}", parent.display())))?;
        }
        let dir = path_arg(path)?;
        if self.head(repo, branch).await?.is_some() {
            self.git(repo, &["worktree", "add", "--quiet", dir, branch])
                .await?;
        } else {
            self.git(
                repo,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "-b",
                    branch,
                    dir,
                    from.as_str(),
                ],
            )
            .await?;
        }
        Ok(())
    }

    async fn remove_worktree(&self, repo: &Path, path: &Path, merged_into: &str) -> GitResult<()> {
        let Some((head, _)) = self.worktree_at(repo, path).await? else {
            self.git(repo, &["worktree", "prune"]).await?;
            return Ok(());
        };
        // A folder deleted by hand holds nothing uncommitted; its commits are on its branch.
        let present = path.exists();
        let clean = !present || self.status(path).await?.is_empty();
        let merged = self.is_ancestor(repo, &head, merged_into).await?;
        may_remove_worktree(clean, merged).map_err(|reason| GitError::Kept {
            path: path.display().to_string(),
            reason,
        })?;
        if !present {
            self.git(repo, &["worktree", "prune"]).await?;
            return Ok(());
        }
        // Forced only past ignored files (build output): nothing tracked or untracked is left.
        self.git(repo, &["worktree", "remove", "--force", path_arg(path)?])
            .await?;
        Ok(())
    }

    async fn commit_all(&self, worktree: &Path, message: &str) -> GitResult<Option<CommitId>> {
        self.git(worktree, &["add", "--all"]).await?;
        let staged = self.raw(worktree, &["diff", "--cached", "--quiet"]).await?;
        match staged.code {
            Some(0) => return Ok(None),
            Some(1) => {}
            _ => return Err(classify(worktree, &["diff", "--cached"], &staged.stderr)),
        }
        // --no-verify: a hook refusing the platform's commit would strand the agent's work.
        self.git(
            worktree,
            &["commit", "--quiet", "--no-verify", "-m", message],
        )
        .await?;
        self.must_resolve(worktree, "HEAD").await.map(Some)
    }

    async fn merge_no_ff(
        &self, worktree: &Path, onto: &CommitId, branch: &str, message: &str,
    ) -> GitResult<MergeOutcome> {
        check_rev(branch)?;
        // A merge an earlier attempt left half done (a crash mid-merge) is dropped first.
        if self.resolve(worktree, "MERGE_HEAD").await?.is_some() {
            self.git(worktree, &["merge", "--abort"]).await?;
        }
        self.git(worktree, &["reset", "--quiet", "--hard", onto.as_str()])
            .await?;
        self.git(worktree, &["clean", "--quiet", "-fd"]).await?;
        let theirs = self.must_resolve(worktree, branch).await?;
        if self
            .is_ancestor(worktree, theirs.as_str(), onto.as_str())
            .await?
        {
            return Ok(MergeOutcome::UpToDate);
        }
        let out = self
            .raw(
                worktree,
                &[
                    "merge",
                    "--no-ff",
                    "--no-verify",
                    "--no-edit",
                    "-m",
                    message,
                    theirs.as_str(),
                ],
            )
            .await?;
        if out.ok() {
            return Ok(MergeOutcome::Merged(
                self.must_resolve(worktree, "HEAD").await?,
            ));
        }
        let conflicted = self
            .git(worktree, &["diff", "--name-only", "--diff-filter=U", "-z"])
            .await?;
        let files: Vec<String> = conflicted
            .split('\0')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect();
        if self.resolve(worktree, "MERGE_HEAD").await?.is_some() {
            self.git(worktree, &["merge", "--abort"]).await?;
        }
        if files.is_empty() {
            self.git(worktree, &["reset", "--quiet", "--hard", onto.as_str()])
                .await?;
            return Err(classify(worktree, &["merge", branch], &out.stderr));
        }
        Ok(MergeOutcome::Conflict { files })
    }

    async fn is_ancestor(&self, repo: &Path, ancestor: &str, descendant: &str) -> GitResult<bool> {
        let a = self.must_resolve(repo, ancestor).await?;
        let d = self.must_resolve(repo, descendant).await?;
        let out = self
            .raw(
                repo,
                &["merge-base", "--is-ancestor", a.as_str(), d.as_str()],
            )
            .await?;
        match out.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(classify(
                repo,
                &["merge-base", "--is-ancestor"],
                &out.stderr,
            )),
        }
    }

    async fn set_branch(
        &self, repo: &Path, branch: &str, to: &CommitId, expected: Option<&CommitId>,
    ) -> GitResult<()> {
        let current = self.head(repo, branch).await?;
        if current.as_ref() == Some(to) {
            return Ok(());
        }
        let moved = |found: Option<CommitId>| GitError::Moved {
            branch: branch.to_string(),
            expected: expected.map_or("no branch".into(), |e| e.to_string()),
            found: found.map_or("no branch".into(), |f| f.to_string()),
        };
        if current.as_ref() != expected {
            return Err(moved(current));
        }
        let refname = format!("refs/heads/{branch}");
        // The old value makes it a compare-and-swap in git itself; "" means "must not exist".
        let old = expected.map_or("", |e| e.as_str());
        let out = self
            .raw(
                repo,
                &["update-ref", "-m", "longrun", &refname, to.as_str(), old],
            )
            .await?;
        if out.ok() {
            return Ok(());
        }
        match self.head(repo, branch).await? {
            Some(now) if &now == to => Ok(()),
            now if now.as_ref() != expected => Err(moved(now)),
            _ => Err(classify(repo, &["update-ref", &refname], &out.stderr)),
        }
    }

    async fn log(
        &self, repo: &Path, since: Option<&str>, until: &str, limit: usize,
    ) -> GitResult<Vec<Commit>> {
        let until = self.must_resolve(repo, until).await?;
        let range = match since {
            Some(s) => format!("{}..{until}", self.must_resolve(repo, s).await?),
            None => until.to_string(),
        };
        let n = format!("--max-count={limit}");
        let text = self
            .git(repo, &["log", &n, "--format=%H%x1f%P%x1f%B%x1e", &range])
            .await?;
        Ok(text
            .split('\u{1e}')
            .filter_map(|record| {
                let mut fields = record.trim_start_matches('\n').splitn(3, '\u{1f}');
                let id = fields.next()?.trim();
                if id.is_empty() {
                    return None;
                }
                let parents = fields.next().unwrap_or("");
                Some(Commit {
                    id: CommitId::new(id),
                    parents: parents.split_whitespace().map(CommitId::new).collect(),
                    message: fields.next().unwrap_or("").trim_end().to_string(),
                })
            })
            .collect())
    }

    async fn status(&self, worktree: &Path) -> GitResult<Vec<StatusEntry>> {
        let text = self
            .git(
                worktree,
                &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
            )
            .await?;
        let mut entries = Vec::new();
        let mut fields = text.split('\0').filter(|f| !f.is_empty());
        while let Some(field) = fields.next() {
            // `XY path`: the code is ASCII, so byte 3 starts the path.
            let (Some(code), Some(path)) = (field.get(..2), field.get(3..)) else {
                continue;
            };
            let code = code.to_string();
            if code.starts_with('R') || code.starts_with('C') {
                // A rename's second field is where it came from.
                fields.next();
            }
            entries.push(StatusEntry {
                code,
                path: path.to_string(),
            });
        }
        Ok(entries)
    }

    async fn files(&self, repo: &Path, rev: &str, limit: usize) -> GitResult<FileTree> {
        let commit = self.must_resolve(repo, rev).await?;
        let text = self
            .git(
                repo,
                &["ls-tree", "-r", "-z", "--name-only", commit.as_str()],
            )
            .await?;
        let mut paths = text.split('\0').filter(|p| !p.is_empty());
        let tree: Vec<String> = paths.by_ref().take(limit).map(str::to_string).collect();
        Ok(FileTree {
            paths: tree,
            truncated: paths.next().is_some(),
        })
    }

    async fn diffstat(&self, repo: &Path, from: &str, to: &str) -> GitResult<DiffStat> {
        let from = self.must_resolve(repo, from).await?;
        let to = self.must_resolve(repo, to).await?;
        let text = self
            .git(
                repo,
                &[
                    "diff",
                    "--numstat",
                    "-z",
                    "--no-renames",
                    from.as_str(),
                    to.as_str(),
                ],
            )
            .await?;
        let files = text
            .split('\0')
            .filter_map(|line| {
                let mut parts = line.splitn(3, '\t');
                let added = parts.next()?;
                let removed = parts.next()?;
                let path = parts.next()?;
                Some(FileStat {
                    path: path.to_string(),
                    added: added.parse().ok(),
                    removed: removed.parse().ok(),
                })
            })
            .collect();
        Ok(DiffStat { files })
    }

    async fn push(&self, repo: &Path, remote: &str, branch: &str) -> GitResult<()> {
        check_rev(branch)?;
        check_rev(remote)?;
        let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
        let out = self
            .raw(repo, &["push", "--quiet", "--porcelain", remote, &refspec])
            .await?;
        if out.ok() {
            return Ok(());
        }
        let said = format!("{}{}", out.stdout, out.stderr);
        if said.contains("[rejected]")
            || said.contains("non-fast-forward")
            || said.contains("[remote rejected]")
        {
            return Err(GitError::Rejected {
                remote: remote.to_string(),
                detail: last_line(&said),
            });
        }
        Err(classify(repo, &["push", remote], &said))
    }

    async fn run_check(
        &self, worktree: &Path, command: &str, timeout: Duration,
    ) -> GitResult<CheckResult> {
        process::run_check(worktree, command, timeout).await
    }
}

/// A revision or remote git would read as an option is refused before it reaches git.
fn check_rev(rev: &str) -> GitResult<()> {
    if rev.is_empty() || rev.starts_with('-') {
        return Err(GitError::Invalid(format!(
            "{rev:?} is not a revision, branch or remote"
        )));
    }
    Ok(())
}

fn path_arg(path: &Path) -> GitResult<&str> {
    path.to_str()
        .filter(|p| !p.starts_with('-'))
        .ok_or_else(|| GitError::Invalid(format!("unusable path {}", path.display())))
}

/// `path` with symbolic links resolved as far as it exists (git prints real paths).
fn canonical(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => path.to_path_buf(),
    }
}

fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// What a failed git command's stderr says, as the port's error.
fn classify(dir: &Path, args: &[&str], stderr: &str) -> GitError {
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("not a git repository") {
        return GitError::NotARepository(dir.display().to_string());
    }
    if lower.contains("does not appear to be a git repository") {
        return GitError::Invalid(last_line(stderr));
    }
    if lower.contains("index.lock")
        || lower.contains("unable to lock")
        || lower.contains("could not resolve host")
        || lower.contains("connection refused")
        || lower.contains("connection timed out")
        || lower.contains("could not read from remote")
    {
        return GitError::Busy(last_line(stderr));
    }
    if lower.contains("unknown revision") || lower.contains("not a valid") {
        return GitError::UnknownRevision(last_line(stderr));
    }
    GitError::Failed {
        command: args.iter().take(2).copied().collect::<Vec<_>>().join(" "),
        detail: last_line(stderr),
    }
}
