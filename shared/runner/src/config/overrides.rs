//! Overrides from the command line and the environment, applied over the file.

use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, seconds};

/// Values from the command line and the environment, applied over the file (CLI > env > file).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub projects_root: Option<PathBuf>,
    pub max_restarts: Option<u32>,
    pub time_budget: Option<Duration>,
}

impl Overrides {
    /// `LONGRUN_PROJECTS_ROOT`, `LONGRUN_MAX_RESTARTS`, `LONGRUN_TIME_BUDGET` (seconds).
    pub fn from_env() -> Result<Self, ConfigError> {
        let bad = |name: &str, message: String| ConfigError {
            file: "environment".into(),
            line: 0,
            key: name.into(),
            message,
        };
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string());
        let max_restarts = match var("LONGRUN_MAX_RESTARTS") {
            Some(v) => Some(v.parse::<u32>().map_err(|_| {
                bad(
                    "LONGRUN_MAX_RESTARTS",
                    format!("must be a whole number from 0 to {}, got {v:?}", u32::MAX),
                )
            })?),
            None => None,
        };
        let time_budget = match var("LONGRUN_TIME_BUDGET") {
            Some(v) => {
                let n = v.parse::<f64>().unwrap_or(f64::NAN);
                Some(seconds(n, true).map_err(|m| bad("LONGRUN_TIME_BUDGET", m))?)
            }
            None => None,
        };
        Ok(Overrides {
            projects_root: std::env::var_os("LONGRUN_PROJECTS_ROOT").map(PathBuf::from),
            max_restarts,
            time_budget,
        })
    }

    /// `self` wins over `lower` where both are set.
    pub fn over(self, lower: Overrides) -> Overrides {
        Overrides {
            projects_root: self.projects_root.or(lower.projects_root),
            max_restarts: self.max_restarts.or(lower.max_restarts),
            time_budget: self.time_budget.or(lower.time_budget),
        }
    }
}
