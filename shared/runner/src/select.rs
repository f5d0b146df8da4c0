//! Which backend runs next: round-robin over `agent_order` or weighted random ("lucky"),
//! skipping backends marked degraded until their cooldown ends. The rotation lives in the task
//! folder (`runs/.selection.json`) so restarts and children share it; the marks live in the
//! projects root (`.longrun-backends.json`), so a backend that failed one task is skipped by
//! the others too. Concurrent writers may lose an update, which costs at most a repeated choice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{RunnerConfig, Selection};

#[derive(Debug, Default, Serialize, Deserialize)]
struct Rotation {
    next: usize,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Marks {
    /// backend → unix seconds until which it is skipped.
    degraded: BTreeMap<String, i64>,
}

fn rotation_path(task_dir: &Path) -> PathBuf {
    task_dir.join("runs").join(".selection.json")
}

fn marks_path(cfg: &RunnerConfig) -> PathBuf {
    cfg.projects_root.join(".longrun-backends.json")
}

fn load<T: Default + for<'de> Deserialize<'de>>(path: &Path) -> T {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

fn save<T: Serialize>(path: &Path, v: &T) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(s) = serde_json::to_string(v) {
        let _ = std::fs::write(path, s);
    }
}

/// A choice and why it was made (recorded in run-info and on the bus).
#[derive(Debug, Clone)]
pub struct Choice {
    pub backend: String,
    pub reason: String,
}

/// Picks the next backend, excluding `tried`. None when every backend is excluded.
pub fn choose(cfg: &RunnerConfig, task_dir: &Path, now: i64, tried: &[String]) -> Option<Choice> {
    let mut st: Rotation = load(&rotation_path(task_dir));
    let marks: Marks = load(&marks_path(cfg));
    let order = &cfg.agent_order;
    let usable: Vec<&String> = order
        .iter()
        .filter(|n| !tried.contains(n))
        .filter(|n| marks.degraded.get(*n).is_none_or(|until| *until <= now))
        .collect();
    // All degraded: use the untried ones anyway rather than stall the task.
    let (pool, note) = if usable.is_empty() {
        (
            order
                .iter()
                .filter(|n| !tried.contains(n))
                .collect::<Vec<_>>(),
            " (every backend degraded)",
        )
    } else {
        (usable, "")
    };
    if pool.is_empty() {
        return None;
    }
    let choice = match cfg.selection {
        Selection::RoundRobin => {
            let n = order.len();
            let pick = (0..n)
                .map(|i| &order[(st.next + i) % n])
                .find(|name| pool.contains(name))
                .cloned()?;
            let at = order.iter().position(|x| *x == pick).unwrap_or(0);
            st.next = (at + 1) % n;
            Choice {
                reason: format!("round_robin{note}"),
                backend: pick,
            }
        }
        Selection::Lucky => {
            let weights: Vec<f64> = pool
                .iter()
                .map(|n| cfg.backends.get(*n).map(|b| b.weight).unwrap_or(1.0))
                .collect();
            let total: f64 = weights.iter().sum();
            let mut x = fastrand::f64() * total;
            let mut pick = pool[pool.len() - 1].clone();
            for (name, w) in pool.iter().zip(&weights) {
                if x < *w {
                    pick = (*name).clone();
                    break;
                }
                x -= w;
            }
            Choice {
                reason: format!("lucky{note}"),
                backend: pick,
            }
        }
    };
    save(&rotation_path(task_dir), &st);
    Some(choice)
}

/// Skips `backend` until `until` (unix seconds), in every task under the projects root.
pub fn mark_degraded(cfg: &RunnerConfig, backend: &str, until: i64) {
    let path = marks_path(cfg);
    let mut marks: Marks = load(&path);
    marks.degraded.insert(backend.to_string(), until);
    save(&path, &marks);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_rotates_and_skips_a_degraded_backend() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = RunnerConfig {
            projects_root: dir.path().to_path_buf(),
            ..RunnerConfig::default()
        };

        let a = choose(&cfg, dir.path(), 0, &[]).expect("a").backend;
        mark_degraded(&cfg, "codex", 100);
        let b = choose(&cfg, dir.path(), 0, &[]).expect("b").backend;
        let c = choose(&cfg, dir.path(), 200, &[]).expect("c").backend;

        assert_eq!(
            (a.as_str(), b.as_str(), c.as_str()),
            ("claude", "gemini", "claude")
        );
    }

    #[test]
    fn lucky_follows_the_weights() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = RunnerConfig {
            selection: Selection::Lucky,
            projects_root: dir.path().to_path_buf(),
            ..RunnerConfig::default()
        };
        for (name, w) in [("claude", 1e-9), ("codex", 1e9), ("gemini", 1e-9)] {
            cfg.backends.get_mut(name).expect("backend").weight = w;
        }
        fastrand::seed(7);

        let picks: Vec<String> = (0..20)
            .map(|_| choose(&cfg, dir.path(), 0, &[]).expect("pick").backend)
            .collect();

        assert!(picks.iter().all(|p| p == "codex"), "{picks:?}");
    }
}
