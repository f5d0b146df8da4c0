//! `InMemoryGit`: the Git port over branches, commits and worktrees held in memory, for the
//! simulator and fast tests. A commit is a set of file changes on its parents (with the
//! snapshot it makes kept beside it); a merge conflicts when both sides changed a file
//! differently since their merge base. Check commands answer what the test registered.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use longrun_domain::repo::{CheckResult, may_remove_worktree};
use longrun_ports::git::{
    Commit, CommitId, DiffStat, FileStat, FileTree, Git, GitError, GitResult, MergeOutcome,
    StatusEntry,
};

/// Files by path: a commit's snapshot, or a worktree's content.
pub type Files = BTreeMap<String, String>;

/// A check command's answer, from the files of the worktree it runs in.
pub type CheckFn = Arc<dyn Fn(&Files) -> (i32, String) + Send + Sync>;

#[derive(Clone, Debug)]
struct MemCommit {
    parents: Vec<CommitId>,
    /// What it changed on its first parent: `None` deletes the file.
    changes: BTreeMap<String, Option<String>>,
    tree: Files,
    message: String,
}

#[derive(Default)]
struct Repo {
    commits: HashMap<CommitId, MemCommit>,
    branches: BTreeMap<String, CommitId>,
}

struct Worktree {
    repo: PathBuf,
    branch: String,
    /// Uncommitted: path → content, `None` for deleted.
    dirty: BTreeMap<String, Option<String>>,
}

#[derive(Default)]
struct State {
    repos: BTreeMap<PathBuf, Repo>,
    worktrees: BTreeMap<PathBuf, Worktree>,
    checks: HashMap<String, CheckFn>,
    next_id: u64,
    /// Every git operation made, in order (`merge`, `commit`, `push`…), for the simulator's
    /// invariants (no merge twice).
    journal: Vec<String>,
}

#[derive(Clone, Default)]
pub struct InMemoryGit {
    state: Arc<Mutex<State>>,
}

impl InMemoryGit {
    pub fn new() -> InMemoryGit {
        InMemoryGit::default()
    }

    fn lock(&self) -> GitResult<std::sync::MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| GitError::Io("in-memory git poisoned by a panic".into()))
    }

    /// A repository at `path` whose `branch` holds one commit of `files`.
    pub fn init(&self, path: &Path, branch: &str, files: &[(&str, &str)]) -> GitResult<CommitId> {
        let mut st = self.lock()?;
        let changes = files
            .iter()
            .map(|(p, c)| (p.to_string(), Some(c.to_string())))
            .collect();
        let mut repo = Repo::default();
        let id = st.new_commit(&mut repo, vec![], changes, "initial commit".into());
        repo.branches.insert(branch.to_string(), id.clone());
        st.repos.insert(path.to_path_buf(), repo);
        // The repository's own checkout is a worktree on `branch`.
        st.worktrees.insert(
            path.to_path_buf(),
            Worktree {
                repo: path.to_path_buf(),
                branch: branch.to_string(),
                dirty: BTreeMap::new(),
            },
        );
        Ok(id)
    }

    /// An empty repository at `path` to push to (a bare remote).
    pub fn init_bare(&self, path: &Path) -> GitResult<()> {
        self.lock()?
            .repos
            .insert(path.to_path_buf(), Repo::default());
        Ok(())
    }

    /// Writes `content` to `file` in the worktree, uncommitted (an agent at work).
    pub fn write(&self, worktree: &Path, file: &str, content: &str) -> GitResult<()> {
        let mut st = self.lock()?;
        let wt = st.worktree_mut(worktree)?;
        wt.dirty.insert(file.to_string(), Some(content.to_string()));
        Ok(())
    }

    pub fn delete(&self, worktree: &Path, file: &str) -> GitResult<()> {
        let mut st = self.lock()?;
        st.worktree_mut(worktree)?
            .dirty
            .insert(file.to_string(), None);
        Ok(())
    }

    /// The worktree's files as they stand, uncommitted changes included.
    pub fn read(&self, worktree: &Path) -> GitResult<Files> {
        self.lock()?.worktree_files(worktree)
    }

    /// How `command` answers when a check runs it; unregistered commands exit 127.
    pub fn on_check(
        &self, command: &str, answer: impl Fn(&Files) -> (i32, String) + Send + Sync + 'static,
    ) {
        if let Ok(mut st) = self.lock() {
            st.checks.insert(command.to_string(), Arc::new(answer));
        }
    }

    /// What commit `id` changed on its first parent (`None`: the file was deleted).
    pub fn changes(&self, repo: &Path, id: &CommitId) -> Option<BTreeMap<String, Option<String>>> {
        let st = self.lock().ok()?;
        st.repo(repo)
            .ok()?
            .commits
            .get(id)
            .map(|c| c.changes.clone())
    }

    /// The operations made so far, oldest first: `merge <branch> -> <commit>`, `commit <id>`…
    pub fn journal(&self) -> Vec<String> {
        self.lock().map(|st| st.journal.clone()).unwrap_or_default()
    }
}

impl State {
    fn new_commit(
        &mut self, repo: &mut Repo, parents: Vec<CommitId>,
        changes: BTreeMap<String, Option<String>>, message: String,
    ) -> CommitId {
        self.next_id += 1;
        let id = CommitId::new(format!("{:040x}", self.next_id));
        let mut tree = parents
            .first()
            .and_then(|p| repo.commits.get(p))
            .map(|c| c.tree.clone())
            .unwrap_or_default();
        apply(&mut tree, &changes);
        repo.commits.insert(
            id.clone(),
            MemCommit {
                parents,
                changes,
                tree,
                message,
            },
        );
        id
    }

    fn repo_path(&self, path: &Path) -> GitResult<PathBuf> {
        if self.repos.contains_key(path) {
            return Ok(path.to_path_buf());
        }
        self.worktrees
            .get(path)
            .map(|w| w.repo.clone())
            .ok_or_else(|| GitError::NotARepository(path.display().to_string()))
    }

    fn repo(&self, path: &Path) -> GitResult<&Repo> {
        let p = self.repo_path(path)?;
        self.repos
            .get(&p)
            .ok_or_else(|| GitError::NotARepository(path.display().to_string()))
    }

    fn worktree_mut(&mut self, path: &Path) -> GitResult<&mut Worktree> {
        self.worktrees
            .get_mut(path)
            .ok_or_else(|| GitError::NotARepository(path.display().to_string()))
    }

    fn worktree_files(&self, path: &Path) -> GitResult<Files> {
        let wt = self
            .worktrees
            .get(path)
            .ok_or_else(|| GitError::NotARepository(path.display().to_string()))?;
        let repo = self.repo(path)?;
        let mut files = repo
            .branches
            .get(&wt.branch)
            .and_then(|h| repo.commits.get(h))
            .map(|c| c.tree.clone())
            .unwrap_or_default();
        apply(&mut files, &wt.dirty);
        Ok(files)
    }
}

impl Repo {
    /// A branch name, `HEAD`-less commit id, or `refs/heads/…`.
    fn resolve(&self, rev: &str) -> Option<CommitId> {
        let name = rev.strip_prefix("refs/heads/").unwrap_or(rev);
        if let Some(id) = self.branches.get(name) {
            return Some(id.clone());
        }
        let id = CommitId::new(rev);
        self.commits.contains_key(&id).then_some(id)
    }

    fn must(&self, rev: &str) -> GitResult<CommitId> {
        self.resolve(rev)
            .ok_or_else(|| GitError::UnknownRevision(rev.to_string()))
    }

    /// `id` and every commit it descends from.
    fn ancestors(&self, id: &CommitId) -> BTreeSet<CommitId> {
        let mut seen = BTreeSet::new();
        let mut todo = VecDeque::from([id.clone()]);
        while let Some(c) = todo.pop_front() {
            if seen.insert(c.clone())
                && let Some(commit) = self.commits.get(&c)
            {
                todo.extend(commit.parents.iter().cloned());
            }
        }
        seen
    }

    /// The best common ancestor: one of the common ancestors that no other one descends from.
    fn merge_base(&self, a: &CommitId, b: &CommitId) -> Option<CommitId> {
        let theirs = self.ancestors(b);
        let common: Vec<CommitId> = self
            .ancestors(a)
            .into_iter()
            .filter(|c| theirs.contains(c))
            .collect();
        common
            .iter()
            .find(|c| {
                !common
                    .iter()
                    .any(|o| o != *c && self.ancestors(o).contains(*c))
            })
            .cloned()
    }

    fn tree(&self, id: &CommitId) -> Files {
        self.commits
            .get(id)
            .map(|c| c.tree.clone())
            .unwrap_or_default()
    }
}

fn apply(files: &mut Files, changes: &BTreeMap<String, Option<String>>) {
    for (path, content) in changes {
        match content {
            Some(c) => files.insert(path.clone(), c.clone()),
            None => files.remove(path),
        };
    }
}

/// What changed from `a` to `b`.
fn diff(a: &Files, b: &Files) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for (path, content) in b {
        if a.get(path) != Some(content) {
            out.insert(path.clone(), Some(content.clone()));
        }
    }
    for path in a.keys() {
        if !b.contains_key(path) {
            out.insert(path.clone(), None);
        }
    }
    out
}

fn lines(s: &str) -> u64 {
    s.lines().count() as u64
}

#[async_trait::async_trait]
impl Git for InMemoryGit {
    async fn head(&self, repo: &Path, branch: &str) -> GitResult<Option<CommitId>> {
        let st = self.lock()?;
        Ok(st.repo(repo)?.branches.get(branch).cloned())
    }

    async fn add_worktree(
        &self, repo: &Path, path: &Path, branch: &str, from: &CommitId,
    ) -> GitResult<()> {
        let mut st = self.lock()?;
        let repo_path = st.repo_path(repo)?;
        if let Some(wt) = st.worktrees.get(path) {
            return if wt.branch == branch && wt.repo == repo_path {
                Ok(())
            } else {
                Err(GitError::Invalid(format!(
                    "worktree {} is on {:?}, not on {branch}",
                    path.display(),
                    wt.branch
                )))
            };
        }
        if st
            .worktrees
            .values()
            .any(|w| w.repo == repo_path && w.branch == branch)
        {
            return Err(GitError::Invalid(format!(
                "branch {branch} is checked out in another worktree"
            )));
        }
        let r = st
            .repos
            .get_mut(&repo_path)
            .ok_or_else(|| GitError::NotARepository(repo.display().to_string()))?;
        if !r.branches.contains_key(branch) {
            if !r.commits.contains_key(from) {
                return Err(GitError::UnknownRevision(from.to_string()));
            }
            r.branches.insert(branch.to_string(), from.clone());
        }
        st.worktrees.insert(
            path.to_path_buf(),
            Worktree {
                repo: repo_path,
                branch: branch.to_string(),
                dirty: BTreeMap::new(),
            },
        );
        st.journal.push(format!("worktree add {branch}"));
        Ok(())
    }

    async fn remove_worktree(&self, repo: &Path, path: &Path, merged_into: &str) -> GitResult<()> {
        let mut st = self.lock()?;
        let repo_path = st.repo_path(repo)?;
        let Some(wt) = st.worktrees.get(path).filter(|w| w.repo == repo_path) else {
            return Ok(());
        };
        let r = st.repo(repo)?;
        let head = r.must(&wt.branch)?;
        let into = r.must(merged_into)?;
        let merged = r.ancestors(&into).contains(&head);
        may_remove_worktree(wt.dirty.is_empty(), merged).map_err(|reason| GitError::Kept {
            path: path.display().to_string(),
            reason,
        })?;
        st.worktrees.remove(path);
        st.journal
            .push(format!("worktree remove {}", path.display()));
        Ok(())
    }

    async fn commit_all(&self, worktree: &Path, message: &str) -> GitResult<Option<CommitId>> {
        let mut st = self.lock()?;
        let files = st.worktree_files(worktree)?;
        let repo_path = st.repo_path(worktree)?;
        let branch = st.worktree_mut(worktree)?.branch.clone();
        let mut repo = st.repos.remove(&repo_path).unwrap_or_default();
        let made = repo.must(&branch).map(|head| {
            let changes = diff(&repo.tree(&head), &files);
            (!changes.is_empty()).then(|| {
                let id = st.new_commit(&mut repo, vec![head], changes, message.to_string());
                repo.branches.insert(branch.clone(), id.clone());
                id
            })
        });
        st.repos.insert(repo_path, repo);
        let made = made?;
        st.worktree_mut(worktree)?.dirty.clear();
        if let Some(id) = &made {
            st.journal.push(format!("commit {branch} {id}"));
        }
        Ok(made)
    }

    async fn merge_no_ff(
        &self, worktree: &Path, onto: &CommitId, branch: &str, message: &str,
    ) -> GitResult<MergeOutcome> {
        let mut st = self.lock()?;
        let repo_path = st.repo_path(worktree)?;
        let wt = st.worktree_mut(worktree)?;
        wt.dirty.clear();
        let ours_branch = wt.branch.clone();
        let mut repo = st.repos.remove(&repo_path).unwrap_or_default();
        let outcome = merge(&mut st, &mut repo, &ours_branch, onto, branch, message);
        st.repos.insert(repo_path, repo);
        if let Ok(o) = &outcome {
            st.journal
                .push(format!("merge {branch} onto {onto}: {o:?}"));
        }
        outcome
    }

    async fn is_ancestor(&self, repo: &Path, ancestor: &str, descendant: &str) -> GitResult<bool> {
        let st = self.lock()?;
        let r = st.repo(repo)?;
        let a = r.must(ancestor)?;
        let d = r.must(descendant)?;
        Ok(r.ancestors(&d).contains(&a))
    }

    async fn set_branch(
        &self, repo: &Path, branch: &str, to: &CommitId, expected: Option<&CommitId>,
    ) -> GitResult<()> {
        let mut st = self.lock()?;
        let repo_path = st.repo_path(repo)?;
        let r = st
            .repos
            .get_mut(&repo_path)
            .ok_or_else(|| GitError::NotARepository(repo.display().to_string()))?;
        let current = r.branches.get(branch).cloned();
        if current.as_ref() == Some(to) {
            return Ok(());
        }
        if current.as_ref() != expected {
            return Err(GitError::Moved {
                branch: branch.to_string(),
                expected: expected.map_or("no branch".into(), |e| e.to_string()),
                found: current.map_or("no branch".into(), |f| f.to_string()),
            });
        }
        if !r.commits.contains_key(to) {
            return Err(GitError::UnknownRevision(to.to_string()));
        }
        r.branches.insert(branch.to_string(), to.clone());
        st.journal.push(format!("set {branch} {to}"));
        Ok(())
    }

    async fn log(
        &self, repo: &Path, since: Option<&str>, until: &str, limit: usize,
    ) -> GitResult<Vec<Commit>> {
        let st = self.lock()?;
        let r = st.repo(repo)?;
        let excluded = match since {
            Some(s) => r.ancestors(&r.must(s)?),
            None => BTreeSet::new(),
        };
        // Newest first: ids grow with time here, so the reverse of their order.
        let mut ids: Vec<CommitId> = r
            .ancestors(&r.must(until)?)
            .into_iter()
            .filter(|c| !excluded.contains(c))
            .collect();
        ids.sort();
        ids.reverse();
        Ok(ids
            .into_iter()
            .take(limit)
            .filter_map(|id| {
                let c = r.commits.get(&id)?;
                Some(Commit {
                    id,
                    message: c.message.clone(),
                    parents: c.parents.clone(),
                })
            })
            .collect())
    }

    async fn status(&self, worktree: &Path) -> GitResult<Vec<StatusEntry>> {
        let st = self.lock()?;
        let wt = st
            .worktrees
            .get(worktree)
            .ok_or_else(|| GitError::NotARepository(worktree.display().to_string()))?;
        let r = st.repo(worktree)?;
        let tree = r
            .resolve(&wt.branch)
            .map(|h| r.tree(&h))
            .unwrap_or_default();
        Ok(wt
            .dirty
            .iter()
            .filter(|(path, content)| tree.get(*path) != content.as_ref())
            .map(|(path, content)| StatusEntry {
                code: match (tree.contains_key(path), content) {
                    (false, _) => "??".into(),
                    (true, Some(_)) => " M".into(),
                    (true, None) => " D".into(),
                },
                path: path.clone(),
            })
            .collect())
    }

    async fn files(&self, repo: &Path, rev: &str, limit: usize) -> GitResult<FileTree> {
        let st = self.lock()?;
        let r = st.repo(repo)?;
        let tree = r.tree(&r.must(rev)?);
        Ok(FileTree {
            paths: tree.keys().take(limit).cloned().collect(),
            truncated: tree.len() > limit,
        })
    }

    async fn diffstat(&self, repo: &Path, from: &str, to: &str) -> GitResult<DiffStat> {
        let st = self.lock()?;
        let r = st.repo(repo)?;
        let (a, b) = (r.tree(&r.must(from)?), r.tree(&r.must(to)?));
        let files = diff(&a, &b)
            .into_iter()
            .map(|(path, now)| {
                let before = a.get(&path).map_or(0, |s| lines(s));
                let after = now.as_deref().map_or(0, lines);
                FileStat {
                    added: Some(after),
                    removed: Some(before),
                    path,
                }
            })
            .collect();
        Ok(DiffStat { files })
    }

    async fn push(&self, repo: &Path, remote: &str, branch: &str) -> GitResult<()> {
        let mut st = self.lock()?;
        let local = st.repo(repo)?;
        let head = local.must(branch)?;
        let commits: Vec<(CommitId, MemCommit)> = local
            .ancestors(&head)
            .into_iter()
            .filter_map(|id| local.commits.get(&id).map(|c| (id, c.clone())))
            .collect();
        let ours = local.ancestors(&head);
        let target = st.repos.get_mut(Path::new(remote)).ok_or_else(|| {
            GitError::Invalid(format!("'{remote}' does not appear to be a git repository"))
        })?;
        if let Some(theirs) = target.branches.get(branch)
            && !ours.contains(theirs)
        {
            return Err(GitError::Rejected {
                remote: remote.to_string(),
                detail: format!("{branch} is not a fast-forward"),
            });
        }
        target.commits.extend(commits);
        target.branches.insert(branch.to_string(), head.clone());
        st.journal.push(format!("push {remote} {branch} {head}"));
        Ok(())
    }

    async fn run_check(
        &self, worktree: &Path, command: &str, _timeout: Duration,
    ) -> GitResult<CheckResult> {
        let (answer, files) = {
            let st = self.lock()?;
            (
                st.checks.get(command).cloned(),
                st.worktree_files(worktree)?,
            )
        };
        let (code, output) = match answer {
            Some(f) => f(&files),
            None => (127, format!("sh: {command}: command not found\n")),
        };
        Ok(CheckResult {
            command: command.to_string(),
            exit_code: Some(code),
            timed_out: false,
            output_tail: output,
            duration_ms: 0,
        })
    }
}

/// `git merge --no-ff branch` on `ours_branch` reset to `onto`.
fn merge(
    st: &mut State, repo: &mut Repo, ours_branch: &str, onto: &CommitId, branch: &str,
    message: &str,
) -> GitResult<MergeOutcome> {
    let theirs = repo.must(branch)?;
    if !repo.commits.contains_key(onto) {
        return Err(GitError::UnknownRevision(onto.to_string()));
    }
    repo.branches.insert(ours_branch.to_string(), onto.clone());
    if repo.ancestors(onto).contains(&theirs) {
        return Ok(MergeOutcome::UpToDate);
    }
    let base = repo
        .merge_base(onto, &theirs)
        .map(|b| repo.tree(&b))
        .unwrap_or_default();
    let ours_tree = repo.tree(onto);
    let ours_changes = diff(&base, &ours_tree);
    let theirs_changes = diff(&base, &repo.tree(&theirs));
    let conflicts: Vec<String> = theirs_changes
        .iter()
        .filter(|(path, change)| ours_changes.get(*path).is_some_and(|o| o != *change))
        .map(|(path, _)| path.clone())
        .collect();
    if !conflicts.is_empty() {
        return Ok(MergeOutcome::Conflict { files: conflicts });
    }
    let mut merged = ours_tree.clone();
    apply(&mut merged, &theirs_changes);
    let changes = diff(&ours_tree, &merged);
    let id = st.new_commit(
        repo,
        vec![onto.clone(), theirs],
        changes,
        message.to_string(),
    );
    repo.branches.insert(ours_branch.to_string(), id.clone());
    Ok(MergeOutcome::Merged(id))
}
