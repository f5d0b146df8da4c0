//! Completion criteria (README, "How a run ends"): plain text, which a completion claim maps to
//! evidence and a grader judges, or checks the platform runs itself on what the claim cites.
//! Pure: the engine reads documents, runs commands and calls the grader; this module says what
//! a check asks and what its outcome means.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// One condition the result must meet.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Criterion {
    /// Plain language: the claim maps it to evidence (`c1`, `c2`, … in order), and, unless
    /// the run turned grading off, a grader judges the cited content against it.
    Text(#[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))] String),
    /// A check the platform runs when a completion claim is made.
    Check(Check),
}

/// A check: `{"check": "contains", "doc": "guide.md", "text": "oolong"}` and its kin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// A document of this run contains a text (case-sensitive).
    Contains {
        #[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))]
        doc: String,
        #[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))]
        text: String,
    },
    /// A document of this run matches a regular expression (Rust `regex` syntax).
    Matches {
        #[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))]
        doc: String,
        #[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))]
        pattern: String,
    },
    /// Agent runs: a shell command in the task folder exits 0.
    Command {
        #[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))]
        run: String,
    },
    /// A rubric judged by the grader over what the claim cites.
    Grader {
        #[schemars(length(min = 1, max = 500), regex(pattern = crate::NOT_BLANK))]
        rubric: String,
    },
}

// By hand: an untagged enum's own error ("did not match any variant") says nothing of what
// was wrong, and the API answers with it.
impl<'de> Deserialize<'de> for Criterion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Criterion::Text(s)),
            v @ serde_json::Value::Object(_) => serde_json::from_value::<Check>(v)
                .map(Criterion::Check)
                .map_err(|e| {
                    D::Error::custom(format!(
                        "a check criterion is {{\"check\": \"contains\"|\"matches\"|\"command\"|\"grader\", …}}: {e}"
                    ))
                }),
            other => Err(D::Error::custom(format!(
                "a completion criterion is a text or a check object, not {other}"
            ))),
        }
    }
}

impl From<&str> for Criterion {
    fn from(s: &str) -> Self {
        Criterion::Text(s.to_string())
    }
}

/// How a run's plain-text criteria are graded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Grading {
    /// Whether a grader judges the cited content against each plain-text criterion (default
    /// true); checks run either way.
    #[serde(default = "yes")]
    pub text: bool,
    /// The grader's `provider:model`, one of the server's models; the run's model when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for Grading {
    fn default() -> Self {
        Grading {
            text: true,
            model: None,
        }
    }
}

impl Grading {
    pub fn is_default(&self) -> bool {
        *self == Grading::default()
    }
}

/// What a verdict's criterion was, as events, records and reports name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// Plain text, mapped to evidence only (the run turned grading off).
    Mapped,
    Contains,
    Matches,
    Command,
    /// Plain text or a rubric, judged by the grader.
    Grader,
}

impl Criterion {
    /// The criterion as the prompt and verdicts show it.
    pub fn label(&self) -> String {
        match self {
            Criterion::Text(t) => t.clone(),
            Criterion::Check(Check::Contains { doc, text }) => {
                format!("`{doc}` contains \"{text}\"")
            }
            Criterion::Check(Check::Matches { doc, pattern }) => {
                format!("`{doc}` matches /{pattern}/")
            }
            Criterion::Check(Check::Command { run }) => format!("`{run}` exits 0"),
            Criterion::Check(Check::Grader { rubric }) => format!("graded: {rubric}"),
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Criterion::Text(t) => Some(t),
            Criterion::Check(_) => None,
        }
    }

    /// The kind of verdict this criterion gets, `graded` saying whether the run grades text.
    pub fn kind(&self, graded: bool) -> CheckKind {
        match self {
            Criterion::Text(_) if graded => CheckKind::Grader,
            Criterion::Text(_) => CheckKind::Mapped,
            Criterion::Check(Check::Contains { .. }) => CheckKind::Contains,
            Criterion::Check(Check::Matches { .. }) => CheckKind::Matches,
            Criterion::Check(Check::Command { .. }) => CheckKind::Command,
            Criterion::Check(Check::Grader { .. }) => CheckKind::Grader,
        }
    }

    /// Whether a claim must map this criterion to evidence itself: a check finds its own, and
    /// a grader (`graded`) reads what the claim maps to it or, when nothing is, all it cites.
    pub fn needs_mapping(&self, graded: bool) -> bool {
        matches!(self, Criterion::Text(_)) && !graded
    }

    /// Why this criterion cannot be accepted as written (`None`: it can). `agent` says
    /// whether the run's iterations are agent processes, the only place a command runs.
    pub fn problem(&self, agent: bool) -> Option<String> {
        let blank = |what: &str, s: &str| crate::is_blank(s).then(|| format!("{what} is blank"));
        match self {
            Criterion::Text(t) => blank("the criterion", t),
            Criterion::Check(Check::Contains { doc, text }) => {
                blank("doc", doc).or_else(|| blank("text", text))
            }
            // A pattern that does not compile fails its check, with the compiler's reason: the
            // API document cannot state Rust's regex grammar, so it is not refused here.
            Criterion::Check(Check::Matches { doc, pattern }) => {
                blank("doc", doc).or_else(|| blank("pattern", pattern))
            }
            Criterion::Check(Check::Command { run }) => blank("run", run).or_else(|| {
                (!agent).then(|| {
                    "a command check runs in an agent run's task folder; this run has no agent"
                        .to_string()
                })
            }),
            Criterion::Check(Check::Grader { rubric }) => blank("rubric", rubric),
        }
    }

    /// Every text this criterion holds, for the request's size and control-character checks.
    pub fn texts(&self) -> Vec<(&'static str, &str)> {
        match self {
            Criterion::Text(t) => vec![("", t)],
            Criterion::Check(Check::Contains { doc, text }) => vec![("doc", doc), ("text", text)],
            Criterion::Check(Check::Matches { doc, pattern }) => {
                vec![("doc", doc), ("pattern", pattern)]
            }
            Criterion::Check(Check::Command { run }) => vec![("run", run)],
            Criterion::Check(Check::Grader { rubric }) => vec![("rubric", rubric)],
        }
    }
}

/// A pattern as checks compile it: bounded, so a pathological one cannot take the worker's
/// memory.
fn compile(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .build()
}

/// The `id` the prompt lists criterion `i` (0-based) under.
pub fn criterion_id(i: usize) -> String {
    format!("c{}", i + 1)
}

/// The outcome of one criterion at one completion claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionVerdict {
    /// `c1`, `c2`, … as the prompt lists the criteria.
    pub id: String,
    pub kind: CheckKind,
    /// The criterion as written (a check's, described).
    pub criterion: String,
    pub passed: bool,
    /// Why it passed or failed: the grader's reasons, a command's exit code and output tail,
    /// the text looked for.
    pub reason: String,
    /// What the verdict looked at: documents by path, the command run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looked_at: Vec<String>,
}

/// A grader's verdict held on the run for the iteration in flight, under the key of what it
/// judged (the criterion and the content it was shown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Grade {
    pub iteration: u32,
    pub key: String,
    pub verdict: CriterionVerdict,
}

/// The run with a grade of iteration `n` held (grades of other iterations dropped).
pub fn hold_grade(
    run: &crate::Run, n: u32, key: &str, verdict: &CriterionVerdict, now: i64,
) -> crate::Run {
    let mut next = run.clone();
    next.grades.retain(|g| g.iteration == n && g.key != key);
    next.grades.push(Grade {
        iteration: n,
        key: key.to_string(),
        verdict: verdict.clone(),
    });
    next.updated_at = now;
    next
}

/// A document check (`contains`, `matches`) on the document's content as this commit leaves
/// it (`None`: no such document). Other kinds are not judged on a document: `None`.
pub fn check_document(
    id: &str, criterion: &Criterion, content: Option<&str>,
) -> Option<CriterionVerdict> {
    let (doc, found, wanted) = match criterion {
        Criterion::Check(Check::Contains { doc, text }) => (
            doc,
            content.map(|c| c.contains(text.as_str())),
            format!("the text \"{text}\""),
        ),
        Criterion::Check(Check::Matches { doc, pattern }) => match compile(pattern) {
            Ok(re) => (
                doc,
                content.map(|c| re.is_match(c)),
                format!("a match for /{pattern}/"),
            ),
            Err(e) => {
                return Some(CriterionVerdict {
                    id: id.to_string(),
                    kind: criterion.kind(false),
                    criterion: criterion.label(),
                    passed: false,
                    reason: format!("/{pattern}/ is not a regular expression: {e}"),
                    looked_at: vec![doc.clone()],
                });
            }
        },
        _ => return None,
    };
    let (passed, reason) = match found {
        None => (
            false,
            format!("document `{doc}` does not exist in this run"),
        ),
        Some(true) => (true, format!("`{doc}` holds {wanted}")),
        Some(false) => (false, format!("`{doc}` does not hold {wanted}")),
    };
    Some(CriterionVerdict {
        id: id.to_string(),
        kind: criterion.kind(false),
        criterion: criterion.label(),
        passed,
        reason,
        looked_at: vec![doc.clone()],
    })
}

/// A command check's verdict from how the command ended (`exit_code` `None`: it did not end
/// on its own, or could not start, as `detail` says) and the tail of its output.
pub fn command_verdict(
    id: &str, criterion: &Criterion, exit_code: Option<i32>, tail: &str, detail: &str,
) -> CriterionVerdict {
    let run = match criterion {
        Criterion::Check(Check::Command { run }) => run.clone(),
        other => other.label(),
    };
    let passed = exit_code == Some(0);
    let mut reason = match exit_code {
        Some(code) => format!("`{run}` exited {code}"),
        None => format!("`{run}` did not exit: {detail}"),
    };
    if !tail.trim().is_empty() {
        reason.push_str("; output ends: ");
        reason.push_str(&crate::clip(tail.trim(), 800));
    }
    CriterionVerdict {
        id: id.to_string(),
        kind: CheckKind::Command,
        criterion: criterion.label(),
        passed,
        reason,
        looked_at: vec![run],
    }
}

/// The grader's answer as it was asked for: `{"pass": bool, "reasons": "…"}`. Tolerant of
/// what models do around JSON (a code fence, prose before or after, `passed`, a list of
/// reasons); `None` when no such object is in it.
pub fn parse_grade(answer: &str) -> Option<(bool, String)> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    let v: serde_json::Value = serde_json::from_str(answer.get(start..=end)?).ok()?;
    let pass = v
        .get("pass")
        .or_else(|| v.get("passed"))
        .and_then(|p| match p {
            serde_json::Value::Bool(b) => Some(*b),
            serde_json::Value::String(s) => match s.to_ascii_lowercase().as_str() {
                "pass" | "true" | "yes" => Some(true),
                "fail" | "false" | "no" => Some(false),
                _ => None,
            },
            _ => None,
        })?;
    let reasons = match v.get("reasons").or_else(|| v.get("reason")) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join("; "),
        _ => String::new(),
    };
    Some((pass, crate::clip(reasons.trim(), 1_000)))
}

/// The grader's instructions: a fresh context, not the planner's conversation.
pub const GRADER_SYSTEM: &str = "You are a strict grader. You are given a run's objective, one \
criterion its result must meet and the content the run cites as evidence. Judge only whether \
that content meets the criterion; do not assume anything it does not show. Answer with one JSON \
object and nothing else: {\"pass\": true or false, \"reasons\": \"one to three sentences: what \
in the content meets the criterion, or what is missing\"}.";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Criterion, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_criterion_is_a_text_or_a_check_object() {
        assert_eq!(parse(r#""cites sources""#), Ok("cites sources".into()));
        assert_eq!(
            parse(r#"{"check": "contains", "doc": "guide.md", "text": "oolong"}"#),
            Ok(Criterion::Check(Check::Contains {
                doc: "guide.md".into(),
                text: "oolong".into()
            }))
        );
        assert_eq!(
            parse(r#"{"check": "command", "run": "cargo test"}"#),
            Ok(Criterion::Check(Check::Command {
                run: "cargo test".into()
            }))
        );
    }

    #[test]
    fn a_malformed_check_says_what_is_wrong() {
        let unknown = parse(r#"{"check": "smells", "doc": "a.md"}"#).unwrap_err();
        let missing = parse(r#"{"check": "contains", "doc": "a.md"}"#).unwrap_err();
        let number = parse("7").unwrap_err();

        assert!(unknown.contains("unknown variant `smells`"), "{unknown}");
        assert!(missing.contains("missing field `text`"), "{missing}");
        assert!(number.contains("a text or a check object"), "{number}");
    }

    #[test]
    fn a_criterion_serializes_back_as_it_was_written() {
        let check = Criterion::Check(Check::Matches {
            doc: "a.md".into(),
            pattern: "^# ".into(),
        });

        let json = serde_json::to_value(&check).unwrap();

        assert_eq!(
            json,
            serde_json::json!({"check": "matches", "doc": "a.md", "pattern": "^# "})
        );
        assert_eq!(serde_json::to_value(Criterion::from("x")).unwrap(), "x");
    }

    #[test]
    fn contains_passes_only_when_the_document_holds_the_text() {
        let c = Criterion::Check(Check::Contains {
            doc: "guide.md".into(),
            text: "oolong".into(),
        });

        let held = check_document("c1", &c, Some("green, oolong and black")).unwrap();
        let lacking = check_document("c1", &c, Some("green and black")).unwrap();
        let missing = check_document("c1", &c, None).unwrap();

        assert!(held.passed);
        assert!(!lacking.passed);
        assert_eq!(
            lacking.reason,
            "`guide.md` does not hold the text \"oolong\""
        );
        assert!(!missing.passed);
        assert!(missing.reason.contains("does not exist"));
        assert_eq!(held.looked_at, vec!["guide.md".to_string()]);
    }

    #[test]
    fn matches_uses_the_pattern_and_a_bad_one_fails_with_the_reason() {
        let c = Criterion::Check(Check::Matches {
            doc: "a.md".into(),
            pattern: r"(?m)^## Sources$".into(),
        });
        let bad = Criterion::Check(Check::Matches {
            doc: "a.md".into(),
            pattern: "(".into(),
        });

        assert!(
            check_document("c1", &c, Some("x\n## Sources\n"))
                .unwrap()
                .passed
        );
        assert!(
            !check_document("c1", &c, Some("## Sourcesx"))
                .unwrap()
                .passed
        );
        let verdict = check_document("c1", &bad, Some("(")).unwrap();
        assert!(!verdict.passed);
        assert!(
            verdict.reason.contains("is not a regular expression"),
            "{}",
            verdict.reason
        );
    }

    #[test]
    fn a_command_check_is_only_accepted_for_an_agent_run() {
        let c = Criterion::Check(Check::Command {
            run: "make check".into(),
        });

        assert!(c.problem(false).unwrap().contains("no agent"));
        assert_eq!(c.problem(true), None);
    }

    #[test]
    fn a_command_verdict_passes_on_exit_zero_and_keeps_the_tail() {
        let c = Criterion::Check(Check::Command {
            run: "cargo test".into(),
        });

        let red = command_verdict("c2", &c, Some(101), "test a ... FAILED\n", "");
        let green = command_verdict("c2", &c, Some(0), "", "");
        let hung = command_verdict("c2", &c, None, "", "timed out after 300 s");

        assert!(!red.passed);
        assert_eq!(
            red.reason,
            "`cargo test` exited 101; output ends: test a ... FAILED"
        );
        assert!(green.passed);
        assert!(!hung.passed);
        assert!(hung.reason.contains("timed out"));
    }

    #[test]
    fn a_grade_is_read_through_what_models_wrap_it_in() {
        assert_eq!(
            parse_grade("```json\n{\"pass\": false, \"reasons\": \"no oolong\"}\n```"),
            Some((false, "no oolong".into()))
        );
        assert_eq!(
            parse_grade("Verdict: {\"passed\": \"yes\", \"reasons\": [\"a\", \"b\"]} done"),
            Some((true, "a; b".into()))
        );
        assert_eq!(parse_grade("it passes"), None);
        assert_eq!(parse_grade("{\"reasons\": \"?\"}"), None);
    }
}
