//! A suite run: many transcripts (in parallel, each in its own process), an optional
//! expected-failures baseline, and the reports (text, JSON lines, JUnit XML).
//!
//! A baseline lists transcripts known to fail against one agent, one per line:
//! `name  # why`. A listed transcript that fails is an expected failure; one that passes, or a
//! name no transcript has, fails the run, so baselines never go stale.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::json;

use super::requirements::{tier_name, Registry, TIERS};
use super::runner::{run, Outcome, RunOptions};
use crate::protocol::ConformanceRequirementTier;

/// What a run says about one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequirementStatus {
    /// Every transcript naming it that ran passed.
    Pass,
    /// A transcript naming it failed (baselined or not).
    Fail,
    /// Every transcript naming it was skipped (dialect, tier or capability).
    Skipped,
    /// No transcript of the run names it.
    NotTested,
}

impl RequirementStatus {
    /// The report word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::Skipped => "SKIPPED",
            Self::NotTested => "NOT_TESTED",
        }
    }
}

/// One requirement's result in a run.
#[derive(Debug, Clone)]
pub struct RequirementResult {
    /// The requirement id.
    pub id: String,
    /// Its tier.
    pub tier: ConformanceRequirementTier,
    /// What the run says.
    pub status: RequirementStatus,
    /// The transcripts of the run that name it.
    pub transcripts: Vec<String>,
}

/// Known failures of one agent: transcript name → reason.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    entries: BTreeMap<String, String>,
}

impl Baseline {
    /// Parses `name  # reason` lines (blank lines and lines starting with `#` are ignored).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut entries = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, reason) = line.split_once('#').map_or((line, ""), |(n, r)| (n.trim(), r.trim()));
            if name.contains(char::is_whitespace) {
                return Err(format!("line {}: expected `name  # reason`, got {line:?}", i + 1));
            }
            if entries.insert(name.to_owned(), reason.to_owned()).is_some() {
                return Err(format!("line {}: {name} is listed twice", i + 1));
            }
        }
        Ok(Self { entries })
    }

    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Drops the entries for transcripts a `--filter` left out of the run (they exist, they
    /// just did not run), so the run does not call them stale.
    pub fn without(&mut self, skipped: &std::collections::BTreeSet<String>) {
        self.entries.retain(|name, _| !skipped.contains(name));
    }

    /// The reason a transcript is expected to fail, if it is listed.
    pub fn reason(&self, name: &str) -> Option<&str> {
        self.entries.get(name).map(String::as_str)
    }
}

/// What one transcript's run means for the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It passed.
    Passed,
    /// It failed and is not in the baseline.
    Failed,
    /// It failed and the baseline says why.
    ExpectedFailure(String),
    /// It passed although the baseline lists it: the entry must go.
    UnexpectedPass,
    /// Not run (a dialect the agent does not speak).
    Skipped(String),
}

impl Verdict {
    /// Whether this verdict fails the run.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Failed | Verdict::UnexpectedPass)
    }
}

/// One transcript's result.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The transcript file.
    pub path: PathBuf,
    /// What happened.
    pub outcome: Outcome,
    /// What it means.
    pub verdict: Verdict,
}

/// The result of a suite run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Name of the agent under test.
    pub agent: String,
    /// Results in file order.
    pub entries: Vec<Entry>,
    /// Baseline names that match no transcript of the run (stale entries).
    pub unknown_baseline_entries: Vec<String>,
}

/// A transcript's header line as JSON, if its first line is JSON.
pub fn transcript_header(path: &Path) -> Option<serde_json::Value> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    serde_json::from_str::<serde_json::Value>(&first).ok()
}

/// A transcript's name (its header line's `name`), if its first line says.
pub fn transcript_name(path: &Path) -> Option<String> {
    transcript_header(path)?.get("name")?.as_str().map(str::to_owned)
}

/// Transcript files under `paths` (directories: their `*.jsonl`, sorted), keeping those whose
/// path contains `filter`.
pub fn collect(paths: &[PathBuf], filter: Option<&str>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<_> =
                std::fs::read_dir(p).into_iter().flatten().flatten().map(|e| e.path()).filter(|f| f.extension().is_some_and(|x| x == "jsonl")).collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    files.retain(|f| filter.is_none_or(|pat| f.display().to_string().contains(pat)));
    files
}

/// The baseline that goes with a transcript directory for an agent, when there is one:
/// `DIR/baselines/<agent>.txt` (a corpus and its per-agent baselines), else
/// `DIR/../baselines/<agent>-<DIR name>.txt` (a sub-corpus such as `kimi/` beside the corpus).
pub fn find_baseline(dir: &Path, agent: &str) -> Option<PathBuf> {
    let own = dir.join("baselines").join(format!("{agent}.txt"));
    let name = dir.file_name()?.to_string_lossy();
    let sibling = dir.parent()?.join("baselines").join(format!("{agent}-{name}.txt"));
    [own, sibling].into_iter().find(|p| p.is_file())
}

/// Runs `files` with up to `jobs` at a time and judges them against `baseline`.
pub fn run_suite(files: &[PathBuf], options: &RunOptions, baseline: Option<&Baseline>, jobs: usize) -> Report {
    run_suite_with_progress(files, options, baseline, jobs, &|_| {})
}

/// [`run_suite`], calling `progress` as each transcript finishes (from the worker threads).
pub fn run_suite_with_progress(files: &[PathBuf], options: &RunOptions, baseline: Option<&Baseline>, jobs: usize, progress: &(dyn Fn(&Outcome) + Sync)) -> Report {
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; files.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, files.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else { break };
                let outcome = run(file, options);
                progress(&outcome);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
            });
        }
    });
    let outcomes = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let entries: Vec<Entry> = files
        .iter()
        .zip(outcomes)
        .map(|(path, outcome)| {
            let outcome = outcome.expect("every transcript ran");
            let listed = baseline.and_then(|b| b.reason(&outcome.name));
            let verdict = match (&outcome.skipped, &outcome.failure, listed) {
                (Some(why), _, _) => Verdict::Skipped(why.clone()),
                (None, None, None) => Verdict::Passed,
                (None, None, Some(_)) => Verdict::UnexpectedPass,
                (None, Some(_), Some(reason)) => Verdict::ExpectedFailure(reason.to_owned()),
                (None, Some(_), None) => Verdict::Failed,
            };
            Entry { path: path.clone(), outcome, verdict }
        })
        .collect();
    let unknown_baseline_entries = baseline
        .map(|b| b.entries.keys().filter(|name| !entries.iter().any(|e| &e.outcome.name == *name)).cloned().collect())
        .unwrap_or_default();
    Report { agent: options.agent.name(), entries, unknown_baseline_entries }
}

impl Report {
    /// Whether the run passed (no failure, no stale baseline entry).
    pub fn passed(&self) -> bool {
        self.unknown_baseline_entries.is_empty() && !self.entries.iter().any(|e| e.verdict.is_failure())
    }

    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.entries.iter().filter(|e| f(&e.verdict)).count()
    }

    /// Human-readable: a line per transcript, details for failures, a closing count line.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            let (name, file) = (&e.outcome.name, e.path.display());
            match &e.verdict {
                Verdict::Passed => {
                    let _ = writeln!(out, "ok   {name} ({file})");
                }
                Verdict::Skipped(why) => {
                    let _ = writeln!(out, "skip {name}: {why}");
                }
                Verdict::ExpectedFailure(reason) => {
                    let _ = writeln!(out, "xfail {name}: {reason}");
                }
                Verdict::UnexpectedPass => {
                    let _ = writeln!(out, "FAIL {name} ({file}): passes now; remove it from the baseline");
                }
                Verdict::Failed => {
                    let _ = writeln!(out, "FAIL {name} ({file}) [{}]", e.outcome.requirements.join(", "));
                    let _ = writeln!(out, "  {}", e.outcome.failure.clone().unwrap_or_default().replace('\n', "\n  "));
                    let _ = writeln!(out, "  last frames:");
                    for f in &e.outcome.last_frames {
                        let _ = writeln!(out, "    {}", f.to_string().chars().take(240).collect::<String>());
                    }
                }
            }
        }
        for name in &self.unknown_baseline_entries {
            let _ = writeln!(out, "FAIL baseline entry {name}: no such transcript; remove it");
        }
        let failed = self.count(Verdict::is_failure) + self.unknown_baseline_entries.len();
        let rows = [
            ("passed", self.count(|v| *v == Verdict::Passed)),
            ("failed", failed),
            ("expected failures (baseline)", self.count(|v| matches!(v, Verdict::ExpectedFailure(_)))),
            ("skipped", self.count(|v| matches!(v, Verdict::Skipped(_)))),
        ];
        let _ = writeln!(out, "\n{:<30} {:>5}", format!("agent: {}", self.agent), "count");
        for (label, n) in rows {
            let _ = writeln!(out, "{label:<30} {n:>5}");
        }
        let _ = write!(out, "{} passed, {failed} failed", self.count(|v| *v == Verdict::Passed));
        let (xfail, skipped) = (self.count(|v| matches!(v, Verdict::ExpectedFailure(_))), self.count(|v| matches!(v, Verdict::Skipped(_))));
        if xfail > 0 || skipped > 0 {
            let _ = write!(out, ", {skipped} skipped, {xfail} expected failures");
        }
        out.push('\n');
        out
    }

    /// Each registry requirement's status in this run, in registry order.
    pub fn requirement_results(&self, registry: &Registry) -> Vec<RequirementResult> {
        registry
            .iter()
            .map(|r| {
                let naming: Vec<&Entry> = self.entries.iter().filter(|e| e.outcome.requirements.iter().any(|id| id == r.id.as_str())).collect();
                let failed = naming.iter().any(|e| matches!(e.verdict, Verdict::Failed | Verdict::ExpectedFailure(_)));
                let passed = naming.iter().any(|e| matches!(e.verdict, Verdict::Passed | Verdict::UnexpectedPass));
                let status = match (naming.is_empty(), failed, passed) {
                    (true, _, _) => RequirementStatus::NotTested,
                    (false, true, _) => RequirementStatus::Fail,
                    (false, false, true) => RequirementStatus::Pass,
                    (false, false, false) => RequirementStatus::Skipped,
                };
                RequirementResult { id: r.id.to_string(), tier: r.tier, status, transcripts: naming.iter().map(|e| e.outcome.name.clone()).collect() }
            })
            .collect()
    }

    /// The text report's closing part: per tier, how many requirements passed, failed, were
    /// skipped or not tested, and which failed.
    pub fn requirements_text(&self, registry: &Registry) -> String {
        let results = self.requirement_results(registry);
        let mut out = format!("\n{:<16} {:>5} {:>5} {:>8} {:>11}\n", "requirements", "PASS", "FAIL", "SKIPPED", "NOT_TESTED");
        for tier in TIERS {
            let of_tier: Vec<&RequirementResult> = results.iter().filter(|r| r.tier == tier).collect();
            let n = |s: RequirementStatus| of_tier.iter().filter(|r| r.status == s).count();
            let _ = writeln!(
                out,
                "{:<16} {:>5} {:>5} {:>8} {:>11}",
                tier_name(tier),
                n(RequirementStatus::Pass),
                n(RequirementStatus::Fail),
                n(RequirementStatus::Skipped),
                n(RequirementStatus::NotTested)
            );
            for r in of_tier.iter().filter(|r| r.status == RequirementStatus::Fail) {
                let _ = writeln!(out, "  FAIL {} ({})", r.id, r.transcripts.join(", "));
            }
        }
        out
    }

    /// One JSON object per transcript (plus one per unknown baseline entry), then one per
    /// requirement of `registry`: `{"requirement", "tier", "status", "transcripts"}`.
    pub fn json_lines_with_requirements(&self, registry: &Registry) -> String {
        let mut out = self.json_lines();
        for r in self.requirement_results(registry) {
            let line = json!({"requirement": r.id, "tier": tier_name(r.tier), "status": r.status.as_str(), "transcripts": r.transcripts, "agent": self.agent});
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// One JSON object per transcript (plus one per unknown baseline entry).
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            let verdict = match &e.verdict {
                Verdict::Passed => "passed",
                Verdict::Failed => "failed",
                Verdict::ExpectedFailure(_) => "expected_failure",
                Verdict::UnexpectedPass => "unexpected_pass",
                Verdict::Skipped(_) => "skipped",
            };
            let reason = match &e.verdict {
                Verdict::ExpectedFailure(r) | Verdict::Skipped(r) => Some(r.clone()),
                _ => None,
            };
            let line = json!({"transcript": e.path.display().to_string(), "name": e.outcome.name, "requirements": e.outcome.requirements,
                              "agent": self.agent, "verdict": verdict, "passed": !e.verdict.is_failure(), "failure": e.outcome.failure,
                              "reason": reason, "durationMs": e.outcome.duration.as_millis() as u64});
            let _ = writeln!(out, "{line}");
        }
        for name in &self.unknown_baseline_entries {
            let _ = writeln!(out, "{}", json!({"name": name, "agent": self.agent, "verdict": "unknown_baseline_entry", "passed": false}));
        }
        out
    }

    /// A JUnit XML report: one `testsuite` (the agent), one `testcase` per transcript;
    /// expected failures and skipped transcripts are `skipped` with their reason.
    pub fn junit(&self) -> String {
        let failures = self.count(Verdict::is_failure) + self.unknown_baseline_entries.len();
        let skipped = self.count(|v| matches!(v, Verdict::ExpectedFailure(_) | Verdict::Skipped(_)));
        let total: f64 = self.entries.iter().map(|e| e.outcome.duration.as_secs_f64()).sum();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites><testsuite name=\"conformance: {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{total:.3}\">",
            xml(&self.agent),
            self.entries.len() + self.unknown_baseline_entries.len()
        );
        for e in &self.entries {
            let _ = write!(
                out,
                "  <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{:.3}\"",
                xml(&e.outcome.requirements.join(",")),
                xml(&e.outcome.name),
                xml(&e.path.display().to_string()),
                e.outcome.duration.as_secs_f64()
            );
            match &e.verdict {
                Verdict::Passed => out.push_str("/>\n"),
                Verdict::Skipped(why) => {
                    let _ = writeln!(out, "><skipped message=\"{}\"/></testcase>", xml(why));
                }
                Verdict::ExpectedFailure(why) => {
                    let _ = writeln!(out, "><skipped message=\"expected failure: {}\"/></testcase>", xml(why));
                }
                Verdict::UnexpectedPass => {
                    let _ = writeln!(out, "><failure message=\"passes now; remove it from the baseline\"/></testcase>");
                }
                Verdict::Failed => {
                    let failure = e.outcome.failure.clone().unwrap_or_default();
                    let first = failure.lines().next().unwrap_or_default();
                    let frames: Vec<String> = e.outcome.last_frames.iter().map(ToString::to_string).collect();
                    let _ = writeln!(
                        out,
                        "><failure message=\"{}\">{}\n\nlast frames:\n{}</failure></testcase>",
                        xml(first),
                        xml(&failure),
                        xml(&frames.join("\n"))
                    );
                }
            }
        }
        for name in &self.unknown_baseline_entries {
            let _ = writeln!(out, "  <testcase classname=\"baseline\" name=\"{}\"><failure message=\"no such transcript; remove it from the baseline\"/></testcase>", xml(name));
        }
        out.push_str("</testsuite></testsuites>\n");
        out
    }
}

/// Escapes text for XML attributes and content (and drops characters XML 1.0 cannot hold).
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(name: &str, failure: Option<&str>, baseline: &Baseline) -> Entry {
        let outcome = Outcome {
            name: name.into(),
            requirements: vec!["R-1".into()],
            failure: failure.map(str::to_owned),
            skipped: None,
            duration: Duration::from_millis(5),
            last_frames: vec![json!({"type": "x<y"})],
        };
        let verdict = match (failure, baseline.reason(name)) {
            (None, None) => Verdict::Passed,
            (None, Some(_)) => Verdict::UnexpectedPass,
            (Some(_), Some(r)) => Verdict::ExpectedFailure(r.into()),
            (Some(_), None) => Verdict::Failed,
        };
        Entry { path: PathBuf::from(format!("{name}.jsonl")), outcome, verdict }
    }

    #[test]
    fn baselines_parse_and_reject_malformed_lines() {
        let b = Baseline::parse("# pi\nrpc-ready  # pi sends no ready\n\nrpc-other\n").unwrap();
        assert_eq!(b.reason("rpc-ready"), Some("pi sends no ready"));
        assert_eq!(b.reason("rpc-other"), Some(""));
        assert!(Baseline::parse("two words # x").unwrap_err().contains("line 1"));
        assert!(Baseline::parse("a\na").unwrap_err().contains("twice"));
    }

    #[test]
    fn expected_failures_pass_and_stale_entries_fail_the_run() {
        let b = Baseline::parse("known # a known gap\nfixed # was a gap").unwrap();
        let report = Report {
            agent: "pi".into(),
            entries: vec![entry("ok", None, &b), entry("known", Some("line 3: differs"), &b)],
            unknown_baseline_entries: vec![],
        };
        assert!(report.passed());
        assert!(report.text().ends_with("1 passed, 0 failed, 0 skipped, 1 expected failures\n"), "{}", report.text());
        let stale = Report { entries: vec![entry("fixed", None, &b)], ..report.clone() };
        assert!(!stale.passed());
        assert!(stale.text().contains("passes now; remove it from the baseline"));
        let unknown = Report { unknown_baseline_entries: vec!["gone".into()], ..report };
        assert!(!unknown.passed());
    }

    #[test]
    fn junit_escapes_and_counts() {
        let b = Baseline::default();
        let report = Report { agent: "a&b".into(), entries: vec![entry("ok", None, &b), entry("bad", Some("line 2: <diff>\nmore"), &b)], unknown_baseline_entries: vec![] };
        let x = report.junit();
        assert!(x.contains("name=\"conformance: a&amp;b\" tests=\"2\" failures=\"1\""));
        assert!(x.contains("<failure message=\"line 2: &lt;diff&gt;\">"));
        assert!(x.contains("{&quot;type&quot;:&quot;x&lt;y&quot;}"));
        assert_eq!(x.matches("<testcase").count(), 2);
    }
}
