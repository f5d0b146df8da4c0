//! The git operations repository runs make (ARCHITECTURE.md, "Repository runs"), as one narrow port: git is the run's
//! second store, so every operation here is idempotent or checkable, and the engine asks git
//! what an earlier attempt already did before it does anything again. Adapters: `CliGit` (the
//! `git` binary) and `InMemoryGit` (the simulator's), both in `longrun-git`.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use longrun_domain::repo::{CheckResult, WorktreeKept};

/// A commit's full id, as git prints it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(String);

impl CommitId {
    pub fn new(id: impl Into<String>) -> CommitId {
        CommitId(id.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 7 characters, as logs show them.
    pub fn short(&self) -> &str {
        self.0.get(..7).unwrap_or(&self.0)
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One commit of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    pub id: CommitId,
    /// The whole message: trailers (`Longrun-Cycle: 3`) are how a phase finds its own commits.
    pub message: String,
    pub parents: Vec<CommitId>,
}

impl Commit {
    pub fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The merge commit made on the worktree's branch.
    Merged(CommitId),
    /// The branch was already contained in what it was to be merged onto: no commit made.
    UpToDate,
    /// The merge stopped on these files; it was aborted and the worktree is back where it was.
    Conflict { files: Vec<String> },
}

/// One line of `git status`: the two-letter code (`??`, ` M`, `A `…) and the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusEntry {
    pub code: String,
    pub path: String,
}

impl fmt::Display for StatusEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.path)
    }
}

/// The files of a revision, at most as many as asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileTree {
    pub paths: Vec<String>,
    /// More files than the bound: `paths` is the first of them in git's order.
    pub truncated: bool,
}

/// Lines added and removed in one file; `None` for a binary file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub path: String,
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffStat {
    pub files: Vec<FileStat>,
}

impl DiffStat {
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// Lines added and removed over all text files.
    pub fn totals(&self) -> (u64, u64) {
        self.files.iter().fold((0, 0), |(a, r), f| {
            (a + f.added.unwrap_or(0), r + f.removed.unwrap_or(0))
        })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GitError {
    /// The path is not a git repository (or worktree) git can use.
    #[error("not a git repository: {0}")]
    NotARepository(String),
    /// A branch or revision that does not exist.
    #[error("unknown revision {0:?}")]
    UnknownRevision(String),
    /// A worktree removal refused: its work would be lost.
    #[error("worktree {path} kept: {reason}")]
    Kept { path: String, reason: WorktreeKept },
    /// A branch was not where the caller expected it: someone else moved it. Re-read, do not
    /// retry blindly.
    #[error("branch {branch} moved: expected {expected}, found {found}")]
    Moved {
        branch: String,
        expected: String,
        found: String,
    },
    /// The remote refused the push (not a fast-forward, protected branch).
    #[error("push to {remote} rejected: {detail}")]
    Rejected { remote: String, detail: String },
    /// Another git process holds the repository's lock, or the remote could not be reached:
    /// the same call later may succeed.
    #[error("git busy or unreachable: {0}")]
    Busy(String),
    /// The request cannot be carried out as asked (a path taken by something else, a worktree
    /// on another branch).
    #[error("{0}")]
    Invalid(String),
    /// git failed in a way not classified above: the command and its stderr.
    #[error("git {command} failed: {detail}")]
    Failed { command: String, detail: String },
    /// git or the check's shell could not be started.
    #[error("cannot run git: {0}")]
    Io(String),
}

impl GitError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, GitError::Busy(_) | GitError::Io(_))
    }
}

pub type GitResult<T> = Result<T, GitError>;

/// Paths are the repository (the user's checkout, or any worktree of it: they share refs) or a
/// worktree where the operation is about one. Revisions are branch names or commit ids.
#[async_trait::async_trait]
pub trait Git: Send + Sync {
    /// The commit `branch` points at; `None` when there is no such branch.
    async fn head(&self, repo: &Path, branch: &str) -> GitResult<Option<CommitId>>;

    async fn branch_exists(&self, repo: &Path, branch: &str) -> GitResult<bool> {
        Ok(self.head(repo, branch).await?.is_some())
    }

    /// A worktree at `path` on a new branch `branch` made at `from`. Idempotent: a worktree
    /// already at `path` on `branch` is left as it is; an existing `branch` with no worktree is
    /// checked out at `path` as it stands (its commits kept, `from` not applied). `Invalid` when
    /// `path` holds anything else.
    async fn add_worktree(
        &self, repo: &Path, path: &Path, branch: &str, from: &CommitId,
    ) -> GitResult<()>;

    /// Removes the worktree at `path`, keeping its branch, only when nothing would be lost
    /// (`longrun_domain::repo::may_remove_worktree`): `Kept` while it has uncommitted changes
    /// or its head is not contained in `merged_into`. Idempotent: no worktree there is `Ok`.
    async fn remove_worktree(&self, repo: &Path, path: &Path, merged_into: &str) -> GitResult<()>;

    /// Commits everything uncommitted in the worktree (new, changed and deleted files, ignored
    /// ones excepted) on its branch with `message`; `None`, and no commit, when it is clean.
    async fn commit_all(&self, worktree: &Path, message: &str) -> GitResult<Option<CommitId>>;

    /// In `worktree` (the run's merge worktree): moves its branch to `onto`, discarding
    /// whatever it held, then merges `branch` with `--no-ff` and `message`. A conflict is
    /// aborted and reported with its files, leaving the worktree clean at `onto`. Checkable
    /// beforehand with `is_ancestor(branch, working)`.
    async fn merge_no_ff(
        &self, worktree: &Path, onto: &CommitId, branch: &str, message: &str,
    ) -> GitResult<MergeOutcome>;

    /// Whether `ancestor` is contained in `descendant` (a commit is its own ancestor).
    async fn is_ancestor(&self, repo: &Path, ancestor: &str, descendant: &str) -> GitResult<bool>;

    /// Points `branch` at `to` if it is at `expected` (`None`: it must not exist yet), as one
    /// compare-and-swap; already at `to` is `Ok`; anywhere else is `Moved`. This is how the
    /// working branch advances to a tested merge. The branch must not be checked out in a
    /// worktree (the working branch never is).
    async fn set_branch(
        &self, repo: &Path, branch: &str, to: &CommitId, expected: Option<&CommitId>,
    ) -> GitResult<()>;

    /// Commits reachable from `until` and not from `since` (all when `None`), newest first, at
    /// most `limit`.
    async fn log(
        &self, repo: &Path, since: Option<&str>, until: &str, limit: usize,
    ) -> GitResult<Vec<Commit>>;

    /// The worktree's uncommitted changes (untracked files included, ignored ones not).
    async fn status(&self, worktree: &Path) -> GitResult<Vec<StatusEntry>>;

    /// The files of revision `rev`, at most `limit`.
    async fn files(&self, repo: &Path, rev: &str, limit: usize) -> GitResult<FileTree>;

    /// Files changed from `from` to `to` (`git diff from to`), renames as delete and add.
    async fn diffstat(&self, repo: &Path, from: &str, to: &str) -> GitResult<DiffStat>;

    /// Pushes `branch` to the same name on `remote` (a remote's name or URL). Idempotent;
    /// `Rejected` when the remote's branch is not contained in ours.
    async fn push(&self, repo: &Path, remote: &str, branch: &str) -> GitResult<()>;

    /// Runs `command` (`sh -c`) in `worktree` with its own process group, stdout and stderr
    /// together; killed with its group once `timeout` passes. The exit code and the output's
    /// tail are the result; a command that fails is a result, not an error.
    async fn run_check(
        &self, worktree: &Path, command: &str, timeout: Duration,
    ) -> GitResult<CheckResult>;
}
