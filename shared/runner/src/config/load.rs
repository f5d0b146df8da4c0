//! Loading: reading the HCL file, parsing and validating it with file:line errors, and the
//! overrides applied over it.

use std::path::Path;
use std::time::Duration;

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::{Attribute, Body};

use super::{
    BackendConfig, ConfigError, Overrides, PromptVia, RunnerConfig, Secret, Selection,
    default_backend, expand_home, seconds,
};
use crate::backend::BackendKind;

impl RunnerConfig {
    /// Loads `path` if it exists (defaults otherwise), then applies the overrides.
    pub fn load(path: &Path, overrides: Overrides) -> Result<Self, ConfigError> {
        let mut cfg = if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
                file: path.display().to_string(),
                line: 0,
                key: "-".into(),
                message: format!("cannot read: {e}"),
            })?;
            Self::parse(&text, &path.display().to_string())?
        } else {
            RunnerConfig::default()
        };
        if path.exists() {
            cfg.source = Some(path.to_path_buf());
        }
        if let Some(p) = overrides.projects_root {
            cfg.projects_root = p;
        }
        if let Some(n) = overrides.max_restarts {
            cfg.max_restarts = n;
        }
        if let Some(d) = overrides.time_budget {
            cfg.time_budget = d;
        }
        Ok(cfg)
    }

    /// Parses and validates config text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ConfigError> {
        let body = hcl_edit::parser::parse_body(text).map_err(|e| ConfigError {
            file: file.to_string(),
            line: e.location().line(),
            key: "-".into(),
            message: format!("not valid HCL: {}", e.message()),
        })?;
        let p = Parser { text, file };
        let mut cfg = RunnerConfig::default();
        let mut backends_seen = false;
        for attr in body.attributes() {
            p.top_attribute(&mut cfg, attr)?;
        }
        for block in body.blocks() {
            let line = p.line(block.span());
            let ident = block.ident.value().as_str();
            if ident == "serve" && block.labels.is_empty() {
                cfg.serve = p.serve(&block.body)?;
                continue;
            }
            if ident != "backend" {
                return Err(p.err(
                    line,
                    ident,
                    "unknown block (only `backend \"name\" { … }` and `serve { … }`)",
                ));
            }
            let [label] = block.labels.as_slice() else {
                return Err(p.err(
                    line,
                    "backend",
                    "needs exactly one name: backend \"name\" { … }",
                ));
            };
            if !backends_seen {
                cfg.backends.clear();
                backends_seen = true;
            }
            let b = p.backend(label.as_str(), &block.body, line)?;
            cfg.backends.insert(b.name.clone(), b);
        }
        for name in &cfg.agent_order {
            if !cfg.backends.contains_key(name) {
                let line = body
                    .get_attribute("agent_order")
                    .map(|a| p.line(a.span()))
                    .unwrap_or(0);
                return Err(p.err(
                    line,
                    "agent_order",
                    &format!("names backend {name:?}, which no backend block defines"),
                ));
            }
        }
        if cfg.agent_order.is_empty() {
            return Err(p.err(0, "agent_order", "must name at least one backend"));
        }
        Ok(cfg)
    }
}

pub(crate) struct Parser<'a> {
    text: &'a str,
    file: &'a str,
}

impl Parser<'_> {
    pub(crate) fn line(&self, span: Option<std::ops::Range<usize>>) -> usize {
        span.map(|r| {
            self.text[..r.start.min(self.text.len())]
                .matches('\n')
                .count()
                + 1
        })
        .unwrap_or(0)
    }

    pub(crate) fn err(&self, line: usize, key: &str, message: &str) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            line,
            key: key.to_string(),
            message: message.to_string(),
        }
    }

    pub(crate) fn number(&self, attr: &Attribute, min: f64) -> Result<f64, ConfigError> {
        let key = attr.key.value().as_str();
        let line = self.line(attr.span());
        let n = match &attr.value {
            Expression::Number(n) => n.value().as_f64(),
            _ => None,
        }
        .filter(|n| n.is_finite())
        .ok_or_else(|| self.err(line, key, "must be a finite number"))?;
        if n < min {
            return Err(self.err(line, key, &format!("must be >= {min}, got {n}")));
        }
        Ok(n)
    }

    fn secs(&self, attr: &Attribute, positive: bool) -> Result<Duration, ConfigError> {
        let key = attr.key.value().as_str();
        let n = match &attr.value {
            Expression::Number(n) => n.value().as_f64(),
            _ => None,
        }
        .unwrap_or(f64::NAN);
        seconds(n, positive).map_err(|m| self.err(self.line(attr.span()), key, &m))
    }

    fn boolean(&self, attr: &Attribute) -> Result<bool, ConfigError> {
        match &attr.value {
            Expression::Bool(b) => Ok(*b.value()),
            _ => Err(self.err(
                self.line(attr.span()),
                attr.key.value().as_str(),
                "must be true or false",
            )),
        }
    }

    /// The value a string attribute spells; any other spelling is an error naming the two.
    fn one_of<T>(
        &self, attr: &Attribute, key: &str, [(a, va), (b, vb)]: [(&str, T); 2],
    ) -> Result<T, ConfigError> {
        match self.string(attr)? {
            s if s == a => Ok(va),
            s if s == b => Ok(vb),
            other => Err(self.err(
                self.line(attr.span()),
                key,
                &format!("must be {a:?} or {b:?}, got {other:?}"),
            )),
        }
    }

    pub(crate) fn string(&self, attr: &Attribute) -> Result<String, ConfigError> {
        match &attr.value {
            Expression::String(s) => Ok(s.value().to_string()),
            _ => Err(self.err(
                self.line(attr.span()),
                attr.key.value().as_str(),
                "must be a string",
            )),
        }
    }

    pub(crate) fn strings(&self, attr: &Attribute) -> Result<Vec<String>, ConfigError> {
        let bad = || {
            self.err(
                self.line(attr.span()),
                attr.key.value().as_str(),
                "must be a list of strings",
            )
        };
        let Expression::Array(a) = &attr.value else {
            return Err(bad());
        };
        a.iter()
            .map(|e| e.as_str().map(str::to_string).ok_or_else(bad))
            .collect()
    }

    fn top_attribute(&self, cfg: &mut RunnerConfig, attr: &Attribute) -> Result<(), ConfigError> {
        let key = attr.key.value().as_str();
        match key {
            "projects_root" => cfg.projects_root = expand_home(&self.string(attr)?),
            "max_restarts" => {
                let n = self.number(attr, 0.0)?;
                if n.fract() != 0.0 || n > f64::from(u32::MAX) {
                    let line = self.line(attr.span());
                    let m = format!("must be a whole number from 0 to {}, got {n}", u32::MAX);
                    return Err(self.err(line, key, &m));
                }
                cfg.max_restarts = n as u32;
            }
            "time_budget" => cfg.time_budget = self.secs(attr, true)?,
            "restart_pause" => cfg.restart_pause = self.secs(attr, false)?,
            "child_wait_timeout" => cfg.child_wait_timeout = self.secs(attr, true)?,
            "child_poll_interval" => cfg.child_poll_interval = self.secs(attr, true)?,
            "idle_threshold" => cfg.idle_threshold = self.secs(attr, true)?,
            "stuck_threshold" => cfg.stuck_threshold = self.secs(attr, true)?,
            "stop_grace" => cfg.stop_grace = self.secs(attr, false)?,
            "degraded_cooldown" => cfg.degraded_cooldown = self.secs(attr, false)?,
            "usage_limit_wait" => cfg.usage_limit_wait = self.secs(attr, true)?,
            "selection" => {
                let spellings = [
                    ("round_robin", Selection::RoundRobin),
                    ("lucky", Selection::Lucky),
                ];
                cfg.selection = self.one_of(attr, key, spellings)?;
            }
            "agent_order" => cfg.agent_order = self.strings(attr)?,
            "resume_sessions" => cfg.resume_sessions = self.boolean(attr)?,
            "max_delegation_depth" => {
                let n = self.number(attr, 1.0)?;
                if n > 16.0 {
                    return Err(self.err(self.line(attr.span()), key, "must be at most 16"));
                }
                cfg.max_delegation_depth = n as u32;
            }
            _ => {
                return Err(self.err(
                    self.line(attr.span()),
                    key,
                    "unknown key (`longrun config schema` lists the keys)",
                ));
            }
        }
        Ok(())
    }

    fn backend(&self, name: &str, body: &Body, line: usize) -> Result<BackendConfig, ConfigError> {
        if let Some(b) = body.blocks().next() {
            return Err(self.err(
                self.line(b.span()),
                b.ident.value().as_str(),
                "unknown block inside backend",
            ));
        }
        let kind_attr = body.get_attribute("type");
        let kind_name = match kind_attr {
            Some(a) => self.string(a)?,
            None => name.to_string(),
        };
        let kind = BackendKind::parse(&kind_name).ok_or_else(|| {
            self.err(
                kind_attr.map(|a| self.line(a.span())).unwrap_or(line),
                &format!("backend.{name}.type"),
                &format!(
                    "must be claude, codex, gemini, perplexity or command, got {kind_name:?} (set `type` for a custom name)"
                ),
            )
        })?;
        let mut b = default_backend(name, kind);
        for attr in body.attributes() {
            let key = attr.key.value().as_str();
            let at = self.line(attr.span());
            match key {
                "type" => {}
                "command" => b.command = self.strings(attr)?,
                "args" => b.args = self.strings(attr)?,
                "prompt" => {
                    let spellings = [("stdin", PromptVia::Stdin), ("arg", PromptVia::Arg)];
                    b.prompt_via = self.one_of(attr, "prompt", spellings)?;
                }
                "weight" => {
                    b.weight = self.number(attr, 0.0)?;
                    if b.weight <= 0.0 {
                        return Err(self.err(at, "weight", "must be > 0"));
                    }
                }
                "token" => b.token = Some(self.token(attr)?),
                "token_env" => b.token_env = Some(self.string(attr)?),
                "env" => {
                    let Expression::Object(o) = &attr.value else {
                        return Err(self.err(at, "env", "must be an object of strings"));
                    };
                    for (k, v) in o.iter() {
                        let k = match k {
                            hcl_edit::expr::ObjectKey::Ident(i) => i.value().to_string(),
                            hcl_edit::expr::ObjectKey::Expression(e) => e
                                .as_str()
                                .map(str::to_string)
                                .ok_or_else(|| self.err(at, "env", "keys must be names"))?,
                        };
                        let v = v
                            .expr()
                            .as_str()
                            .ok_or_else(|| self.err(at, "env", "values must be strings"))?;
                        b.env.insert(k, v.to_string());
                    }
                }
                _ => {
                    return Err(self.err(
                        at,
                        &format!("backend.{name}.{key}"),
                        "unknown key (`longrun config schema` lists the keys)",
                    ));
                }
            }
        }
        if b.command.is_empty() {
            return Err(self.err(
                line,
                &format!("backend.{name}.command"),
                "must not be empty",
            ));
        }
        Ok(b)
    }

    /// Inline, or `@/path/file` read now: a token that cannot be read fails the load.
    fn token(&self, attr: &Attribute) -> Result<Secret, ConfigError> {
        let raw = self.string(attr)?;
        let Some(path) = raw.strip_prefix('@') else {
            return Ok(Secret(raw));
        };
        let path = expand_home(path);
        std::fs::read_to_string(&path)
            .map(|s| Secret(s.trim().to_string()))
            .map_err(|e| {
                self.err(
                    self.line(attr.span()),
                    "token",
                    &format!("cannot read token file {}: {e}", path.display()),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_refused_with_its_file_and_line() {
        let text = "max_restarts = 3\n\nchild_wait_timeot = 5\n";

        let err = RunnerConfig::parse(text, "c.hcl").expect_err("unknown key");

        assert_eq!((err.file.as_str(), err.line), ("c.hcl", 3));
        assert_eq!(err.key, "child_wait_timeot");
    }

    #[test]
    fn a_missing_token_file_is_a_config_error_naming_the_line() {
        let text = "backend \"claude\" {\n  token = \"@/nonexistent/token\"\n}\nagent_order = [\"claude\"]\n";

        let err = RunnerConfig::parse(text, "c.hcl").expect_err("missing token file");

        assert_eq!((err.line, err.key.as_str()), (2, "token"));
    }
}
