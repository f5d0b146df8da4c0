//! The Git port's conformance suite: the same cases on `CliGit` (real git, temporary
//! repositories) and on `InMemoryGit`, so the simulator's double behaves as git does where
//! repository runs depend on it.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use longrun_domain::repo::{WorktreeKept, merge_branch, task_branch};
use longrun_git::{CHECK_TAIL_BYTES, CliGit, InMemoryGit};
use longrun_ports::git::{CommitId, Git, GitError, MergeOutcome};

const WORKING: &str = "longrun/conf";
const PASSING: &str = "echo ok";
const FAILING: &str = "echo first; echo failing; exit 3";
const READS: &str = "cat README.md";

/// What a case needs besides the port: a repository, places for worktrees, a way for an
/// "agent" to write files, and a remote.
trait Harness {
    fn git(&self) -> &dyn Git;
    /// The repository: `main` holds `README.md` ("hello\n") and `src/lib.rs`.
    fn repo(&self) -> PathBuf;
    fn worktree(&self, name: &str) -> PathBuf;
    fn write(&self, worktree: &Path, file: &str, content: &str);
    /// An empty repository to push to.
    fn remote(&self) -> String;
}

struct Real {
    dir: tempfile::TempDir,
    git: CliGit,
}

fn sh_git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@localhost"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed in {}", dir.display());
}

impl Real {
    fn new() -> Real {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).expect("mkdir");
        sh_git(&repo, &["init", "--quiet", "--initial-branch=main"]);
        std::fs::write(repo.join("README.md"), "hello\n").expect("write");
        std::fs::write(repo.join("src/lib.rs"), "// lib\n").expect("write");
        sh_git(&repo, &["add", "--all"]);
        sh_git(&repo, &["commit", "--quiet", "-m", "initial commit"]);
        Real {
            dir,
            git: CliGit::new(),
        }
    }
}

impl Harness for Real {
    fn git(&self) -> &dyn Git {
        &self.git
    }
    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }
    fn worktree(&self, name: &str) -> PathBuf {
        self.dir.path().join("worktrees").join(name)
    }
    fn write(&self, worktree: &Path, file: &str, content: &str) {
        let path = worktree.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write");
    }
    fn remote(&self) -> String {
        let remote = self.dir.path().join("remote.git");
        std::fs::create_dir_all(&remote).expect("mkdir");
        sh_git(&remote, &["init", "--quiet", "--bare"]);
        remote.display().to_string()
    }
}

struct Memory {
    git: InMemoryGit,
}

impl Memory {
    fn new() -> Memory {
        let git = InMemoryGit::new();
        git.init(
            Path::new("/mem/repo"),
            "main",
            &[("README.md", "hello\n"), ("src/lib.rs", "// lib\n")],
        )
        .expect("init");
        git.on_check(PASSING, |_| (0, "ok\n".into()));
        git.on_check(FAILING, |_| (3, "first\nfailing\n".into()));
        git.on_check(READS, |files| match files.get("README.md") {
            Some(text) => (0, text.clone()),
            None => (1, "cat: README.md: No such file or directory\n".into()),
        });
        Memory { git }
    }
}

impl Harness for Memory {
    fn git(&self) -> &dyn Git {
        &self.git
    }
    fn repo(&self) -> PathBuf {
        PathBuf::from("/mem/repo")
    }
    fn worktree(&self, name: &str) -> PathBuf {
        Path::new("/mem/worktrees").join(name)
    }
    fn write(&self, worktree: &Path, file: &str, content: &str) {
        self.git.write(worktree, file, content).expect("write");
    }
    fn remote(&self) -> String {
        self.git
            .init_bare(Path::new("/mem/remote.git"))
            .expect("bare");
        "/mem/remote.git".into()
    }
}

/// The working branch made from `main`, and the merge worktree on its own branch.
async fn working(h: &dyn Harness) -> (CommitId, PathBuf) {
    let (git, repo) = (h.git(), h.repo());
    let main = git.head(&repo, "main").await.unwrap().expect("main");
    git.set_branch(&repo, WORKING, &main, None).await.unwrap();
    let merge_wt = h.worktree("merge");
    git.add_worktree(&repo, &merge_wt, &merge_branch(WORKING), &main)
        .await
        .unwrap();
    (main, merge_wt)
}

/// Task `n` of cycle 1: a worktree on its branch from `from`, `file` written and committed.
async fn task(
    h: &dyn Harness, from: &CommitId, n: u32, file: &str, content: &str,
) -> (PathBuf, String) {
    let (git, repo) = (h.git(), h.repo());
    let branch = task_branch(WORKING, 1, n);
    let wt = h.worktree(&format!("task-1-{n}"));
    git.add_worktree(&repo, &wt, &branch, from).await.unwrap();
    h.write(&wt, file, content);
    git.commit_all(&wt, &format!("task {n}: {file}"))
        .await
        .unwrap();
    (wt, branch)
}

/// Merges `branch` onto the working head in the merge worktree and advances the working
/// branch to the merge, as the merge queue does.
async fn merge(h: &dyn Harness, merge_wt: &Path, branch: &str) -> MergeOutcome {
    let (git, repo) = (h.git(), h.repo());
    let onto = git.head(&repo, WORKING).await.unwrap().expect("working");
    let outcome = git
        .merge_no_ff(merge_wt, &onto, branch, &format!("Merge {branch}"))
        .await
        .unwrap();
    if let MergeOutcome::Merged(commit) = &outcome {
        git.set_branch(&repo, WORKING, commit, Some(&onto))
            .await
            .unwrap();
    }
    outcome
}

async fn three_task_branches_merge_no_ff_onto_the_working_branch_in_order(h: &dyn Harness) {
    let (main, merge_wt) = working(h).await;
    let mut branches = vec![];
    for (n, file) in [(1, "a.txt"), (2, "b.txt"), (3, "src/c.rs")] {
        branches.push(task(h, &main, n, file, &format!("{file}\n")).await.1);
    }

    let mut outcomes = vec![];
    for b in &branches {
        outcomes.push(merge(h, &merge_wt, b).await);
    }

    let (git, repo) = (h.git(), h.repo());
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, MergeOutcome::Merged(_))),
        "{outcomes:?}"
    );
    let log = git.log(&repo, Some("main"), WORKING, 50).await.unwrap();
    let merges: Vec<&str> = log
        .iter()
        .filter(|c| c.parents.len() == 2)
        .map(|c| c.subject())
        .collect();
    let expected: Vec<String> = branches
        .iter()
        .rev()
        .map(|b| format!("Merge {b}"))
        .collect();
    assert_eq!(merges, expected, "newest first, one merge commit per task");
    assert_eq!(log.len(), 6, "three merges and three task commits");
    let files = git.files(&repo, WORKING, 100).await.unwrap().paths;
    for f in ["a.txt", "b.txt", "src/c.rs", "README.md"] {
        assert!(files.contains(&f.to_string()), "{f} missing from {files:?}");
    }
}

async fn a_conflict_is_detected_and_aborted_and_the_working_branch_stays_put(h: &dyn Harness) {
    let (main, merge_wt) = working(h).await;
    let (_, first) = task(h, &main, 1, "README.md", "hello from one\n").await;
    let (_, second) = task(h, &main, 2, "README.md", "hello from two\n").await;
    let (_, third) = task(h, &main, 3, "other.txt", "fine\n").await;
    assert!(matches!(
        merge(h, &merge_wt, &first).await,
        MergeOutcome::Merged(_)
    ));
    let before = h.git().head(&h.repo(), WORKING).await.unwrap();

    let conflict = merge(h, &merge_wt, &second).await;

    let (git, repo) = (h.git(), h.repo());
    assert_eq!(
        conflict,
        MergeOutcome::Conflict {
            files: vec!["README.md".into()]
        }
    );
    assert_eq!(git.head(&repo, WORKING).await.unwrap(), before);
    assert!(
        git.status(&merge_wt).await.unwrap().is_empty(),
        "the merge was aborted"
    );
    assert!(!git.is_ancestor(&repo, &second, WORKING).await.unwrap());
    assert!(
        matches!(merge(h, &merge_wt, &third).await, MergeOutcome::Merged(_)),
        "the queue goes on after a conflict"
    );
}

async fn a_branch_is_in_the_working_branch_only_after_its_merge_and_merging_again_is_a_no_op(
    h: &dyn Harness,
) {
    let (main, merge_wt) = working(h).await;
    let (_, branch) = task(h, &main, 1, "a.txt", "a\n").await;
    let (git, repo) = (h.git(), h.repo());
    let before = git.is_ancestor(&repo, &branch, WORKING).await.unwrap();

    merge(h, &merge_wt, &branch).await;
    let after = git.is_ancestor(&repo, &branch, WORKING).await.unwrap();
    let head = git.head(&repo, WORKING).await.unwrap();
    let again = merge(h, &merge_wt, &branch).await;

    assert!(!before);
    assert!(after);
    assert_eq!(again, MergeOutcome::UpToDate);
    assert_eq!(git.head(&repo, WORKING).await.unwrap(), head);
    assert!(git.is_ancestor(&repo, "main", WORKING).await.unwrap());
}

async fn what_an_agent_left_uncommitted_is_committed_once(h: &dyn Harness) {
    let (main, _) = working(h).await;
    let (git, repo) = (h.git(), h.repo());
    let wt = h.worktree("task-1-1");
    git.add_worktree(&repo, &wt, &task_branch(WORKING, 1, 1), &main)
        .await
        .unwrap();
    let clean = git.commit_all(&wt, "nothing").await.unwrap();
    h.write(&wt, "notes/todo.md", "- more\n");
    h.write(&wt, "README.md", "changed\n");
    let dirty = git.status(&wt).await.unwrap();

    let commit = git.commit_all(&wt, "task-1-1: leftovers").await.unwrap();
    let again = git.commit_all(&wt, "task-1-1: leftovers").await.unwrap();

    assert_eq!(clean, None);
    let mut paths: Vec<_> = dirty.iter().map(|s| s.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, vec!["README.md", "notes/todo.md"]);
    let commit = commit.expect("a commit of the leftovers");
    assert_eq!(again, None);
    assert!(git.status(&wt).await.unwrap().is_empty());
    let branch = task_branch(WORKING, 1, 1);
    assert_eq!(git.head(&repo, &branch).await.unwrap(), Some(commit));
    let log = git.log(&repo, Some("main"), &branch, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].subject(), "task-1-1: leftovers");
    let stat = git.diffstat(&repo, "main", &branch).await.unwrap();
    assert_eq!(stat.paths(), vec!["README.md", "notes/todo.md"]);
    assert_eq!(stat.totals(), (2, 1));
}

async fn a_worktree_holding_unmerged_work_is_kept_and_a_merged_one_removed(h: &dyn Harness) {
    let (main, merge_wt) = working(h).await;
    let (wt, branch) = task(h, &main, 1, "a.txt", "a\n").await;
    let (git, repo) = (h.git(), h.repo());

    let unmerged = git.remove_worktree(&repo, &wt, WORKING).await;
    merge(h, &merge_wt, &branch).await;
    h.write(&wt, "b.txt", "not yet committed\n");
    let dirty = git.remove_worktree(&repo, &wt, WORKING).await;
    git.commit_all(&wt, "more").await.unwrap();
    merge(h, &merge_wt, &branch).await;
    let removed = git.remove_worktree(&repo, &wt, WORKING).await;
    let again = git.remove_worktree(&repo, &wt, WORKING).await;

    assert!(
        matches!(
            unmerged,
            Err(GitError::Kept {
                reason: WorktreeKept::Unmerged,
                ..
            })
        ),
        "{unmerged:?}"
    );
    assert!(
        matches!(
            dirty,
            Err(GitError::Kept {
                reason: WorktreeKept::Uncommitted,
                ..
            })
        ),
        "{dirty:?}"
    );
    assert_eq!(removed, Ok(()));
    assert_eq!(again, Ok(()), "removing a removed worktree is a no-op");
    assert!(
        git.branch_exists(&repo, &branch).await.unwrap(),
        "the branch is kept"
    );
}

async fn the_working_branch_pushes_to_a_bare_remote_and_a_rewound_one_is_rejected(h: &dyn Harness) {
    let (main, merge_wt) = working(h).await;
    let (_, branch) = task(h, &main, 1, "a.txt", "a\n").await;
    merge(h, &merge_wt, &branch).await;
    let (git, repo) = (h.git(), h.repo());
    let remote = h.remote();
    let head = git.head(&repo, WORKING).await.unwrap().expect("working");

    git.push(&repo, &remote, WORKING).await.unwrap();
    git.push(&repo, &remote, WORKING).await.unwrap();
    let pushed = git.head(Path::new(&remote), WORKING).await.unwrap();
    git.set_branch(&repo, WORKING, &main, Some(&head))
        .await
        .unwrap();
    let rewound = git.push(&repo, &remote, WORKING).await;

    assert_eq!(pushed, Some(head));
    assert!(
        matches!(rewound, Err(GitError::Rejected { .. })),
        "{rewound:?}"
    );
}

async fn a_check_reports_its_exit_code_and_the_tail_of_its_output(h: &dyn Harness) {
    let (_, merge_wt) = working(h).await;
    let git = h.git();

    let pass = git
        .run_check(&merge_wt, PASSING, Duration::from_secs(30))
        .await
        .unwrap();
    let fail = git
        .run_check(&merge_wt, FAILING, Duration::from_secs(30))
        .await
        .unwrap();

    let reads = git
        .run_check(&merge_wt, READS, Duration::from_secs(30))
        .await
        .unwrap();

    assert!(pass.passed(), "{pass:?}");
    assert_eq!(
        reads.output_tail, "hello\n",
        "the check runs on the worktree's files"
    );
    assert_eq!(pass.output_tail, "ok\n");
    assert_eq!(fail.exit_code, Some(3));
    assert!(!fail.passed() && !fail.timed_out);
    assert_eq!(fail.output_tail, "first\nfailing\n");
    assert_eq!(fail.command, FAILING);
}

async fn a_worktree_added_again_is_adopted_and_a_moved_branch_is_not_overwritten(h: &dyn Harness) {
    let (main, _) = working(h).await;
    let (wt, branch) = task(h, &main, 1, "a.txt", "a\n").await;
    let (git, repo) = (h.git(), h.repo());
    let head = git
        .head(&repo, &branch)
        .await
        .unwrap()
        .expect("task branch");

    let adopted = git.add_worktree(&repo, &wt, &branch, &main).await;
    let other = git
        .add_worktree(&repo, &wt, &task_branch(WORKING, 1, 2), &main)
        .await;
    let stale = git.set_branch(&repo, WORKING, &head, Some(&head)).await;
    let unknown = git.head(&repo, "no-such-branch").await.unwrap();

    assert_eq!(adopted, Ok(()));
    assert_eq!(
        git.head(&repo, &branch).await.unwrap(),
        Some(head.clone()),
        "commits kept"
    );
    assert!(matches!(other, Err(GitError::Invalid(_))), "{other:?}");
    assert!(matches!(stale, Err(GitError::Moved { .. })), "{stale:?}");
    assert_eq!(git.head(&repo, WORKING).await.unwrap(), Some(main));
    assert_eq!(unknown, None);
}

async fn the_file_tree_is_bounded_and_status_shows_new_files(h: &dyn Harness) {
    let (main, _) = working(h).await;
    let (git, repo) = (h.git(), h.repo());
    let wt = h.worktree("task-1-1");
    git.add_worktree(&repo, &wt, &task_branch(WORKING, 1, 1), &main)
        .await
        .unwrap();
    h.write(&wt, "new.txt", "x\n");
    h.write(&wt, "notes/été 1.txt", "y\n");

    let all = git.files(&repo, "main", 10).await.unwrap();
    let one = git.files(&repo, "main", 1).await.unwrap();
    let status = git.status(&wt).await.unwrap();

    assert_eq!(all.paths, vec!["README.md", "src/lib.rs"]);
    assert!(!all.truncated);
    assert_eq!(one.paths.len(), 1);
    assert!(one.truncated);
    let listed: Vec<String> = status.iter().map(|s| s.to_string()).collect();
    assert_eq!(listed, vec!["?? new.txt", "?? notes/été 1.txt"]);
}

macro_rules! conformance {
    ($module:ident, $harness:expr) => {
        mod $module {
            use super::*;

            #[tokio::test]
            async fn three_task_branches_merge_no_ff_onto_the_working_branch_in_order() {
                super::three_task_branches_merge_no_ff_onto_the_working_branch_in_order(&$harness).await;
            }

            #[tokio::test]
            async fn a_conflict_is_detected_and_aborted_and_the_working_branch_stays_put() {
                super::a_conflict_is_detected_and_aborted_and_the_working_branch_stays_put(&$harness).await;
            }

            #[tokio::test]
            async fn a_branch_is_in_the_working_branch_only_after_its_merge_and_merging_again_is_a_no_op() {
                super::a_branch_is_in_the_working_branch_only_after_its_merge_and_merging_again_is_a_no_op(&$harness).await;
            }

            #[tokio::test]
            async fn what_an_agent_left_uncommitted_is_committed_once() {
                super::what_an_agent_left_uncommitted_is_committed_once(&$harness).await;
            }

            #[tokio::test]
            async fn a_worktree_holding_unmerged_work_is_kept_and_a_merged_one_removed() {
                super::a_worktree_holding_unmerged_work_is_kept_and_a_merged_one_removed(&$harness).await;
            }

            #[tokio::test]
            async fn the_working_branch_pushes_to_a_bare_remote_and_a_rewound_one_is_rejected() {
                super::the_working_branch_pushes_to_a_bare_remote_and_a_rewound_one_is_rejected(&$harness).await;
            }

            #[tokio::test]
            async fn a_check_reports_its_exit_code_and_the_tail_of_its_output() {
                super::a_check_reports_its_exit_code_and_the_tail_of_its_output(&$harness).await;
            }

            #[tokio::test]
            async fn a_worktree_added_again_is_adopted_and_a_moved_branch_is_not_overwritten() {
                super::a_worktree_added_again_is_adopted_and_a_moved_branch_is_not_overwritten(&$harness).await;
            }

            #[tokio::test]
            async fn the_file_tree_is_bounded_and_status_shows_new_files() {
                super::the_file_tree_is_bounded_and_status_shows_new_files(&$harness).await;
            }
        }
    };
}

conformance!(cli, Real::new());
conformance!(memory, Memory::new());

/// Only the real adapter has processes to kill and a git state a crash can leave behind.
mod cli_only {
    use super::*;

    #[tokio::test]
    async fn a_check_that_outlives_its_timeout_is_killed_with_its_children() {
        let h = Real::new();
        let (_, merge_wt) = working(&h).await;
        let started = Instant::now();

        let check = h
            .git
            .run_check(
                &merge_wt,
                "sleep 30 & sleep 30; echo never",
                Duration::from_millis(300),
            )
            .await
            .unwrap();

        assert!(check.timed_out);
        assert_eq!(check.exit_code, None);
        assert!(!check.output_tail.contains("never"));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_long_output_keeps_only_its_tail() {
        let h = Real::new();
        let (_, merge_wt) = working(&h).await;

        let check = h
            .git
            .run_check(
                &merge_wt,
                "seq 1 100000; echo done >&2",
                Duration::from_secs(30),
            )
            .await
            .unwrap();

        assert!(check.passed());
        assert!(check.output_tail.len() <= CHECK_TAIL_BYTES);
        assert!(
            check.output_tail.ends_with("100000\ndone\n"),
            "{}",
            &check.output_tail
        );
    }

    #[tokio::test]
    async fn a_merge_a_crash_left_half_done_is_dropped_before_the_next_one() {
        let h = Real::new();
        let (main, merge_wt) = working(&h).await;
        let (_, first) = task(&h, &main, 1, "README.md", "one\n").await;
        let (_, second) = task(&h, &main, 2, "README.md", "two\n").await;
        sh_git(&merge_wt, &["merge", "--quiet", &first]);
        // The crash: a conflicted merge left in the worktree, MERGE_HEAD and all.
        let _ = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@l",
                "merge",
                &second,
            ])
            .current_dir(&merge_wt)
            .output();

        let outcome = merge(&h, &merge_wt, &first).await;

        assert!(matches!(outcome, MergeOutcome::Merged(_)), "{outcome:?}");
        assert!(h.git.status(&merge_wt).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_worktree_folder_deleted_by_hand_is_added_again_on_its_branch_and_removed_once_merged()
     {
        let h = Real::new();
        let (main, merge_wt) = working(&h).await;
        let (wt, branch) = task(&h, &main, 1, "a.txt", "a\n").await;
        let head = h.git.head(&h.repo(), &branch).await.unwrap();
        std::fs::remove_dir_all(&wt).unwrap();

        let kept = h.git.remove_worktree(&h.repo(), &wt, WORKING).await;
        h.git
            .add_worktree(&h.repo(), &wt, &branch, &main)
            .await
            .unwrap();
        let readded = h.git.head(&h.repo(), &branch).await.unwrap();
        let restored = wt.join("a.txt").exists();
        merge(&h, &merge_wt, &branch).await;
        std::fs::remove_dir_all(&wt).unwrap();
        let removed = h.git.remove_worktree(&h.repo(), &wt, WORKING).await;

        assert!(
            matches!(
                kept,
                Err(GitError::Kept {
                    reason: WorktreeKept::Unmerged,
                    ..
                })
            ),
            "{kept:?}"
        );
        assert_eq!(readded, head, "the branch's commits are kept");
        assert!(restored, "the folder is made again with the branch's files");
        assert_eq!(removed, Ok(()));
    }

    #[tokio::test]
    async fn a_folder_that_is_no_repository_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();

        let err = CliGit::new().head(dir.path(), "main").await.unwrap_err();

        assert!(matches!(err, GitError::NotARepository(_)), "{err:?}");
        assert!(!err.is_retryable());
    }
}
