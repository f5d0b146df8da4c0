//! What a repository run is asked to work on (ARCHITECTURE.md, "Repository runs"): the repository, its branches, how
//! many agents at once, the checks that certify the work, and where to push. Checked once, at
//! creation, into a `RepoSpec`; nothing after that re-validates it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{DomainError, is_blank, no_controls};

/// Agents at once when the request names no number (the seed's `maxParallelTasks`).
pub const DEFAULT_MAX_PARALLEL: u32 = 3;
/// More agents than this on one machine starve each other of CPU and the model of quota.
pub const MAX_PARALLEL_LIMIT: u32 = 16;
/// Checks a run may name: each runs on every merge, so a long list multiplies merge time.
pub const MAX_CHECKS: usize = 16;

/// The `repository` object of a create request, as the caller wrote it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepoSpecInput {
    /// Absolute path of the git repository on the machine that runs the agents.
    pub path: String,
    /// The branch the working branch starts from.
    pub base_branch: String,
    /// The branch the run merges its tasks onto; default `longrun/<short run id>`.
    #[serde(default)]
    pub working_branch: Option<String>,
    /// Agents at once (1 to 16); default 3.
    #[serde(default)]
    pub max_parallel: Option<u32>,
    /// Shell commands run in the merge worktree (`cargo test`); each must exit 0.
    #[serde(default)]
    pub checks: Vec<String>,
    /// Coding agents tasks may run (`claude`, `codex`, …); empty: the run's agent.
    #[serde(default)]
    pub agents: Vec<String>,
    /// A git remote (name or URL) the working branch is pushed to after each merge queue.
    #[serde(default)]
    pub remote: Option<String>,
}

/// A repository run's repository, checked: every field has the shape git and the engine need.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepoSpec {
    pub path: String,
    pub base_branch: String,
    pub working_branch: String,
    #[serde(default = "default_max_parallel")]
    pub max_parallel: u32,
    #[serde(default)]
    pub checks: Vec<String>,
    #[serde(default)]
    pub agents: Vec<String>,
    #[serde(default)]
    pub remote: Option<String>,
}

fn default_max_parallel() -> u32 {
    DEFAULT_MAX_PARALLEL
}

/// `longrun/` and the first 8 characters of the run id's random part (`run_` dropped).
pub fn default_working_branch(run_id: &str) -> String {
    let short: String = run_id
        .strip_prefix("run_")
        .unwrap_or(run_id)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(8)
        .collect();
    format!("longrun/{short}")
}

impl RepoSpec {
    /// Checks `input` for run `run_id` and fills in the defaults. Only the shape is checked
    /// here; whether the path is a git repository with that base branch, and under a root the
    /// server allows, is the use case's question (it needs IO).
    pub fn parse(input: RepoSpecInput, run_id: &str) -> Result<RepoSpec, DomainError> {
        let path = input.path.trim().to_string();
        if is_blank(&path) {
            return Err(invalid("repository.path", "must name the git repository"));
        }
        no_controls("", &path).map_err(|m| invalid("repository.path", m.trim()))?;
        if !path.starts_with('/') {
            return Err(invalid(
                "repository.path",
                format!("must be an absolute path, got {path:?}"),
            ));
        }
        let base_branch = input.base_branch.trim().to_string();
        check_branch("repository.base_branch", &base_branch)?;
        let working_branch = match input.working_branch.map(|b| b.trim().to_string()) {
            Some(b) if !b.is_empty() => b,
            _ => default_working_branch(run_id),
        };
        check_branch("repository.working_branch", &working_branch)?;
        if working_branch == base_branch {
            return Err(invalid(
                "repository.working_branch",
                format!(
                    "must differ from the base branch {base_branch:?}: the run never commits to its base"
                ),
            ));
        }
        let max_parallel = input.max_parallel.unwrap_or(DEFAULT_MAX_PARALLEL);
        if !(1..=MAX_PARALLEL_LIMIT).contains(&max_parallel) {
            return Err(invalid(
                "repository.max_parallel",
                format!("must be 1 to {MAX_PARALLEL_LIMIT}, got {max_parallel}"),
            ));
        }
        let checks = check_list("repository.checks", input.checks, MAX_CHECKS)?;
        let agents = check_list("repository.agents", input.agents, MAX_CHECKS)?;
        let remote = match input.remote.map(|r| r.trim().to_string()) {
            Some(r) if r.is_empty() => None,
            Some(r) => {
                no_controls("", &r).map_err(|m| invalid("repository.remote", m.trim()))?;
                if r.starts_with('-') || r.contains(char::is_whitespace) {
                    return Err(invalid(
                        "repository.remote",
                        format!("must be a remote name or URL, got {r:?}"),
                    ));
                }
                Some(r)
            }
            None => None,
        };
        Ok(RepoSpec {
            path,
            base_branch,
            working_branch,
            max_parallel,
            checks,
            agents,
            remote,
        })
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> DomainError {
    DomainError::InvalidField {
        field,
        message: message.into(),
    }
}

fn check_list(
    field: &'static str, items: Vec<String>, max: usize,
) -> Result<Vec<String>, DomainError> {
    if items.len() > max {
        return Err(invalid(
            field,
            format!("may hold at most {max} entries, got {}", items.len()),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let item = item.trim().to_string();
        if is_blank(&item) {
            return Err(invalid(field, format!("entry {i} is empty")));
        }
        no_controls("", &item).map_err(|m| invalid(field, format!("entry {i}{m}")))?;
        out.push(item);
    }
    Ok(out)
}

/// `git check-ref-format --branch`'s rules, without running git: the name becomes part of
/// every task's branch and of git command lines, so a bad one must fail at creation.
pub fn check_branch(field: &'static str, name: &str) -> Result<(), DomainError> {
    let why = branch_problem(name);
    match why {
        Some(why) => Err(invalid(field, format!("{why}, got {name:?}"))),
        None => Ok(()),
    }
}

fn branch_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("must name a branch");
    }
    if name.starts_with('-') {
        return Some("must not start with '-'");
    }
    if name == "@" || name == "HEAD" {
        return Some("must name a branch, not a revision");
    }
    if name.chars().any(|c| {
        c.is_control() || c.is_whitespace() || matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\')
    }) {
        return Some("must not hold spaces, control characters or any of ~ ^ : ? * [ \\");
    }
    if name.contains("..") || name.contains("@{") || name.contains("//") {
        return Some("must not hold '..', '@{' or '//'");
    }
    if name.starts_with('/') || name.ends_with('/') || name.ends_with('.') {
        return Some("must not start or end with '/' or end with '.'");
    }
    if name
        .split('/')
        .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return Some("no part between slashes may start with '.' or end with '.lock'");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> RepoSpecInput {
        RepoSpecInput {
            path: "/src/app".into(),
            base_branch: "main".into(),
            checks: vec!["cargo test".into()],
            ..Default::default()
        }
    }

    #[test]
    fn defaults_fill_the_working_branch_from_the_run_id_and_three_agents() {
        let spec = RepoSpec::parse(input(), "run_0123456789abcdef").unwrap();

        assert_eq!(spec.working_branch, "longrun/01234567");
        assert_eq!(spec.max_parallel, 3);
        assert_eq!(spec.checks, vec!["cargo test"]);
        assert_eq!(spec.remote, None);
    }

    #[test]
    fn an_empty_check_is_refused_naming_the_field() {
        let mut bad = input();
        bad.checks.push("  ".into());

        let err = RepoSpec::parse(bad, "run_1").unwrap_err();

        assert_eq!(err.to_string(), "repository.checks entry 1 is empty");
    }

    #[test]
    fn a_relative_path_a_bad_branch_and_too_many_agents_are_refused() {
        let relative = RepoSpecInput {
            path: "src/app".into(),
            ..input()
        };
        let bad_branch = RepoSpecInput {
            working_branch: Some("feature..x".into()),
            ..input()
        };
        let same_branch = RepoSpecInput {
            working_branch: Some("main".into()),
            ..input()
        };
        let too_many = RepoSpecInput {
            max_parallel: Some(17),
            ..input()
        };
        let option_remote = RepoSpecInput {
            remote: Some("--upload-pack=evil".into()),
            ..input()
        };

        let errors: Vec<String> = [relative, bad_branch, same_branch, too_many, option_remote]
            .into_iter()
            .map(|i| RepoSpec::parse(i, "run_1").unwrap_err().to_string())
            .collect();

        assert!(
            errors[0].starts_with("repository.path must be an absolute path"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("repository.working_branch must not hold '..'"),
            "{errors:?}"
        );
        assert!(
            errors[2].contains("must differ from the base branch"),
            "{errors:?}"
        );
        assert!(errors[3].contains("must be 1 to 16, got 17"), "{errors:?}");
        assert!(
            errors[4].starts_with("repository.remote must be"),
            "{errors:?}"
        );
    }

    #[test]
    fn branch_names_follow_git_rules() {
        for good in ["main", "longrun/auth", "release-1.2", "a/b_c"] {
            assert!(check_branch("b", good).is_ok(), "{good}");
        }
        for bad in [
            "", "-x", "a b", "a~1", "a/", "/a", "a.lock", "a/.b", "a@{1}", "HEAD",
        ] {
            assert!(check_branch("b", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stored_spec_without_the_optional_fields_still_reads() {
        let json = r#"{"path":"/r","base_branch":"main","working_branch":"longrun/x"}"#;

        let spec: RepoSpec = serde_json::from_str(json).unwrap();

        assert_eq!(spec.max_parallel, DEFAULT_MAX_PARALLEL);
        assert!(spec.checks.is_empty() && spec.agents.is_empty());
    }
}
