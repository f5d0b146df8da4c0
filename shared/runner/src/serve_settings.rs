//! `serve`'s own knobs in the config file: a `serve { … }` block. The command line and the
//! environment win over it; it wins over the built-in defaults.

use std::path::PathBuf;

use hcl_edit::Span;
use hcl_edit::structure::Body;

use crate::config::{ConfigError, KeySpec, Parser, expand_home};

/// What the file sets; `None`/empty: not set there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeSettings {
    pub data_dir: Option<PathBuf>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub models: Vec<String>,
    pub active_limit: Option<u32>,
    pub max_inflight: Option<usize>,
    pub app_base_url: Option<String>,
    pub read_timeout: Option<u64>,
    pub drain_grace: Option<u64>,
    pub retention_days: Option<u32>,
    pub retention_export_dir: Option<PathBuf>,
}

/// Keys of the `serve { … }` block.
pub const SERVE_KEYS: &[KeySpec] = &[
    KeySpec {
        key: "data_dir",
        kind: "string (path; ~ expands)",
        default: "\".longrun\"",
        doc: "SQLite database and the demo script (--data-dir).",
    },
    KeySpec {
        key: "host",
        kind: "string",
        default: "\"127.0.0.1\"",
        doc: "Address to listen on (--host).",
    },
    KeySpec {
        key: "port",
        kind: "integer 0..=65535",
        default: "8080",
        doc: "Port to listen on; 0 picks a free one (--port).",
    },
    KeySpec {
        key: "models",
        kind: "list of provider:model",
        default: "the demo script",
        doc: "Models runs may use, the first the default (--model).",
    },
    KeySpec {
        key: "active_limit",
        kind: "integer >= 1",
        default: "the built-in limit",
        doc: "Active runs one user may have at once (LONGRUN_ACTIVE_LIMIT).",
    },
    KeySpec {
        key: "max_inflight",
        kind: "integer >= 1",
        default: "the built-in limit",
        doc: "Iterations worked on at once (LONGRUN_MAX_INFLIGHT).",
    },
    KeySpec {
        key: "app_base_url",
        kind: "string (URL)",
        default: "the listening address",
        doc: "Base of deep links in notifications (LONGRUN_APP_BASE_URL).",
    },
    KeySpec {
        key: "read_timeout",
        kind: "seconds >= 1",
        default: "30",
        doc: "How long a client may take to send headers or a piece of body (LONGRUN_READ_TIMEOUT).",
    },
    KeySpec {
        key: "drain_grace",
        kind: "seconds >= 0",
        default: "20",
        doc: "How long iterations in flight get after SIGTERM (LONGRUN_DRAIN_GRACE).",
    },
    KeySpec {
        key: "retention_days",
        kind: "integer >= 1",
        default: "keep every run",
        doc: "Delete ended runs this many days after they ended (LONGRUN_RETENTION_DAYS).",
    },
    KeySpec {
        key: "retention_export_dir",
        kind: "string (path; ~ expands)",
        default: "none: delete only",
        doc: "Write each run there as <run-id>.json before deleting it (LONGRUN_RETENTION_EXPORT_DIR).",
    },
];

impl Parser<'_> {
    pub(crate) fn serve(&self, body: &Body) -> Result<ServeSettings, ConfigError> {
        if let Some(b) = body.blocks().next() {
            let line = self.line(b.span());
            return Err(self.err(line, b.ident.value().as_str(), "unknown block inside serve"));
        }
        let mut s = ServeSettings::default();
        for attr in body.attributes() {
            let key = attr.key.value().as_str();
            let int = |min: f64, max: f64| -> Result<f64, ConfigError> {
                let n = self.number(attr, min)?;
                match n <= max && n.fract() == 0.0 {
                    true => Ok(n),
                    false => Err(self.err(
                        self.line(attr.span()),
                        &format!("serve.{key}"),
                        &format!("must be a whole number from {min} to {max}"),
                    )),
                }
            };
            match key {
                "data_dir" => s.data_dir = Some(expand_home(&self.string(attr)?)),
                "host" => s.host = Some(self.string(attr)?),
                "port" => s.port = Some(int(0.0, 65_535.0)? as u16),
                "models" => s.models = self.strings(attr)?,
                "active_limit" => s.active_limit = Some(int(1.0, 1e9)? as u32),
                "max_inflight" => s.max_inflight = Some(int(1.0, 1e9)? as usize),
                "app_base_url" => s.app_base_url = Some(self.string(attr)?),
                "read_timeout" => s.read_timeout = Some(int(1.0, 86_400.0)? as u64),
                "drain_grace" => s.drain_grace = Some(int(0.0, 86_400.0)? as u64),
                "retention_days" => s.retention_days = Some(int(1.0, 36_500.0)? as u32),
                "retention_export_dir" => {
                    s.retention_export_dir = Some(expand_home(&self.string(attr)?))
                }
                _ => {
                    return Err(self.err(
                        self.line(attr.span()),
                        &format!("serve.{key}"),
                        "unknown key (`longrun config schema` lists the keys)",
                    ));
                }
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::RunnerConfig;

    #[test]
    fn a_serve_block_sets_serves_knobs() {
        let cfg = RunnerConfig::parse(
            "serve {\n  port = 9090\n  models = [\"openai:gpt-5\"]\n  drain_grace = 5\n}\n",
            "c.hcl",
        )
        .expect("parses");

        assert_eq!(cfg.serve.port, Some(9090));
        assert_eq!(cfg.serve.models, ["openai:gpt-5"]);
        assert_eq!(cfg.serve.drain_grace, Some(5));
        assert_eq!(cfg.serve.host, None);
    }

    #[test]
    fn a_serve_block_sets_the_retention_policy() {
        let cfg = RunnerConfig::parse(
            "serve {\n  retention_days = 30\n  retention_export_dir = \"/var/lib/longrun/archive\"\n}\n",
            "c.hcl",
        )
        .expect("parses");
        let zero = RunnerConfig::parse("serve {\n  retention_days = 0\n}\n", "c.hcl").unwrap_err();

        assert_eq!(cfg.serve.retention_days, Some(30));
        assert_eq!(
            cfg.serve.retention_export_dir.as_deref(),
            Some(std::path::Path::new("/var/lib/longrun/archive"))
        );
        assert!(zero.key.ends_with("retention_days"), "{}", zero.key);
    }

    #[test]
    fn an_unknown_or_out_of_range_serve_key_names_its_line() {
        let unknown = RunnerConfig::parse("serve {\n  colour = 1\n}\n", "c.hcl").unwrap_err();
        let range = RunnerConfig::parse("serve {\n\n  port = 70000\n}\n", "c.hcl").unwrap_err();

        assert_eq!((unknown.line, unknown.key.as_str()), (2, "serve.colour"));
        assert_eq!((range.line, range.key.as_str()), (3, "serve.port"));
    }
}
