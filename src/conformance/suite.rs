//! A suite run: many transcripts (in parallel, each in its own process), an optional
//! expected-failures baseline, and the reports (text, JSON lines, JUnit XML).
//!
//! A baseline lists transcripts known to fail against one agent, one per line:
//! `name  # why`, or `name:REQ-ID  # why` for a single check (the failure must be charged to
//! that requirement). A listed transcript that fails as listed is an expected failure; one that
//! passes, one that fails on another check, or a name no transcript has, fails the run, so
//! baselines never go stale.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::json;

use super::error::InputError;
use super::requirements::{tier_name, Registry, TIERS};
use super::runner::{run, Outcome, RunOptions};
use crate::protocol::ConformanceRequirementTier;

/// What a run says about one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequirementStatus {
    /// Every transcript naming it that ran passed.
    Pass,
    /// A transcript failed on a line charged to it (baselined or not).
    Fail,
    /// A line setting up its precondition failed, so it could not be checked: counts as failed.
    NotTestable,
    /// MANDATORY in a dialect the agent speaks, but no transcript of the run exercised it:
    /// counts as failed.
    Unexercised,
    /// Every transcript naming it was skipped (dialect, tier or capability).
    Skipped,
    /// No transcript of the run names it.
    NotTested,
}

impl RequirementStatus {
    /// Whether the status counts as a failure of the requirement.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Fail | Self::NotTestable | Self::Unexercised)
    }

    /// The report word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::NotTestable => "NOT_TESTABLE",
            Self::Unexercised => "UNEXERCISED",
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

/// One baselined failure: the single check (requirement id) it is about, if it names one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineEntry {
    /// `name:REQ-ID`: the failure must be charged to this requirement.
    pub check: Option<String>,
    /// Why it fails.
    pub reason: String,
}

/// Known failures of one agent: transcript name → entry.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    entries: BTreeMap<String, BaselineEntry>,
}

impl Baseline {
    /// Parses `name  # reason` lines (blank lines and lines starting with `#` are ignored).
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let mut entries = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            let bad = |reason: String| Err(InputError::Content { at: format!("line {}", i + 1), reason });
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, reason) = line.split_once('#').map_or((line, ""), |(n, r)| (n.trim(), r.trim()));
            if name.contains(char::is_whitespace) {
                return bad(format!("expected `name  # reason` or `name:REQ-ID  # reason`, got {line:?}"));
            }
            let (name, check) = match name.split_once(':') {
                Some((n, id)) if !n.is_empty() && !id.is_empty() => (n, Some(id.to_owned())),
                Some(_) => return bad(format!("expected `name:REQ-ID`, got {name:?}")),
                None => (name, None),
            };
            if entries.insert(name.to_owned(), BaselineEntry { check, reason: reason.to_owned() }).is_some() {
                return bad(format!("{name} is listed twice"));
            }
        }
        Ok(Self { entries })
    }

    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = std::fs::read_to_string(path).map_err(|source| InputError::Io { path: path.to_owned(), source })?;
        Self::parse(&text).map_err(|e| match e {
            InputError::Content { at, reason } => InputError::Content { at: format!("{}: {at}", path.display()), reason },
            other => other,
        })
    }

    /// Drops the entries for transcripts a `--filter` left out of the run (they exist, they
    /// just did not run), so the run does not call them stale.
    pub fn without(&mut self, skipped: &std::collections::BTreeSet<String>) {
        self.entries.retain(|name, _| !skipped.contains(name));
    }

    /// The reason a transcript is expected to fail, if it is listed.
    pub fn reason(&self, name: &str) -> Option<&str> {
        self.entries.get(name).map(|e| e.reason.as_str())
    }

    /// The entry for a transcript, if it is listed.
    pub fn entry(&self, name: &str) -> Option<&BaselineEntry> {
        self.entries.get(name)
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
    /// Not run (the reason), although the baseline lists it: the entry claims a failure
    /// nothing checks, so it must go.
    SkippedButListed(String),
}

impl Verdict {
    /// Whether this verdict fails the run.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Failed | Verdict::UnexpectedPass | Verdict::SkippedButListed(_))
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
    /// MANDATORY requirements of the dialects the agent was run on that no transcript
    /// exercised, when the run covered a whole corpus ([`Report::judge_coverage`]); each fails
    /// the run.
    pub unexercised: Vec<String>,
    /// Whether coverage was judged (a run over a whole corpus): only then is a MANDATORY
    /// requirement nothing exercised `Unexercised` rather than `NotTested`.
    pub coverage_judged: bool,
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
            let mut outcome = outcome.expect("every transcript ran");
            let verdict = verdict(&mut outcome, baseline);
            Entry { path: path.clone(), outcome, verdict }
        })
        .collect();
    let unknown_baseline_entries = baseline
        .map(|b| b.entries.keys().filter(|name| !entries.iter().any(|e| &e.outcome.name == *name)).cloned().collect())
        .unwrap_or_default();
    Report { agent: options.agent.name(), entries, unknown_baseline_entries, unexercised: Vec::new(), coverage_judged: false }
}

/// What an outcome means against a baseline. A failure that a single-check entry does not
/// cover (it is charged to other requirements) is an unexpected failure, and says so.
fn verdict(outcome: &mut Outcome, baseline: Option<&Baseline>) -> Verdict {
    let listed = baseline.and_then(|b| b.entry(&outcome.name));
    match (&outcome.skipped, &outcome.failure, listed) {
        (Some(why), _, Some(_)) => Verdict::SkippedButListed(why.clone()),
        (Some(why), _, None) => Verdict::Skipped(why.clone()),
        (None, None, None) => Verdict::Passed,
        (None, None, Some(_)) => Verdict::UnexpectedPass,
        (None, Some(_), Some(BaselineEntry { check: Some(id), .. })) if !outcome.charged.contains(id) => {
            let charged = if outcome.charged.is_empty() { "no requirement".to_owned() } else { outcome.charged.join(", ") };
            outcome.failure = outcome.failure.take().map(|f| format!("{f}\n(the baseline expects a failure of {id}; this one is charged to {charged})"));
            Verdict::Failed
        }
        (None, Some(_), Some(entry)) => Verdict::ExpectedFailure(match &entry.check {
            Some(id) => format!("{id}: {}", entry.reason),
            None => entry.reason.clone(),
        }),
        (None, Some(_), None) => Verdict::Failed,
    }
}

impl Report {
    /// Whether the run passed (no failure, no stale baseline entry, no MANDATORY requirement
    /// left unexercised).
    pub fn passed(&self) -> bool {
        self.unknown_baseline_entries.is_empty() && self.unexercised.is_empty() && !self.entries.iter().any(|e| e.verdict.is_failure())
    }

    /// For a run over a whole corpus: records the MANDATORY requirements no transcript
    /// exercised, so they fail the run.
    pub fn judge_coverage(&mut self, registry: &Registry) {
        self.coverage_judged = true;
        self.unexercised = self.requirement_results(registry).into_iter().filter(|r| r.status == RequirementStatus::Unexercised).map(|r| r.id).collect();
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
                Verdict::SkippedButListed(why) => {
                    let _ = writeln!(out, "FAIL {name} ({file}): skipped ({why}), but the baseline lists it; remove the entry");
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
        for id in &self.unexercised {
            let _ = writeln!(out, "FAIL {id}: MANDATORY, but no transcript of the run exercised it");
        }
        let failed = self.count(Verdict::is_failure) + self.unknown_baseline_entries.len() + self.unexercised.len();
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

    /// Each registry requirement's status in this run, in registry order. A failure counts
    /// against the requirements of the line that failed only; a MANDATORY requirement of a
    /// dialect the agent was run on that no transcript exercised is `Unexercised`.
    pub fn requirement_results(&self, registry: &Registry) -> Vec<RequirementResult> {
        let ran = |e: &&Entry| !matches!(e.verdict, Verdict::Skipped(_) | Verdict::SkippedButListed(_));
        let dialects: std::collections::BTreeSet<&str> = self.entries.iter().filter(ran).filter_map(|e| e.outcome.dialect.as_deref()).collect();
        registry
            .iter()
            .map(|r| {
                let id = r.id.as_str();
                let naming: Vec<&Entry> = self.entries.iter().filter(|e| e.outcome.requirements.iter().any(|x| x == id)).collect();
                let charged = |e: &&&Entry| e.outcome.failure.is_some() && ran(e) && e.outcome.charged.iter().any(|x| x == id);
                let failed = naming.iter().filter(charged).any(|e| !e.outcome.not_testable);
                let untestable = naming.iter().filter(charged).any(|e| e.outcome.not_testable);
                // Earned per line: a checking line charged to it held (in a transcript that passed,
                // or one that failed later); a transcript merely naming it proves nothing.
                let passed = naming.iter().any(|e| ran(e) && e.outcome.checked.iter().any(|x| x == id));
                let status = if failed {
                    RequirementStatus::Fail
                } else if untestable {
                    RequirementStatus::NotTestable
                } else if passed {
                    RequirementStatus::Pass
                } else if self.coverage_judged && r.tier == ConformanceRequirementTier::Mandatory && dialects.contains(r.dialect.to_string().as_str()) {
                    RequirementStatus::Unexercised
                } else if naming.iter().any(ran) {
                    // Only transcripts that failed before reaching it.
                    RequirementStatus::NotTested
                } else if naming.is_empty() {
                    RequirementStatus::NotTested
                } else {
                    RequirementStatus::Skipped
                };
                RequirementResult { id: id.to_owned(), tier: r.tier, status, transcripts: naming.iter().map(|e| e.outcome.name.clone()).collect() }
            })
            .collect()
    }

    /// The text report's closing part: per tier, how many requirements passed, failed, were
    /// skipped or not tested, and which failed.
    pub fn requirements_text(&self, registry: &Registry) -> String {
        let results = self.requirement_results(registry);
        let mut out = format!("\n{:<16} {:>5} {:>5} {:>8} {:>11}\n", "requirements", "PASS", "FAIL", "SKIPPED", "NOT_TESTED");
        let failing = |s: RequirementStatus| s.is_failure();
        for tier in TIERS {
            let of_tier: Vec<&RequirementResult> = results.iter().filter(|r| r.tier == tier).collect();
            let n = |s: RequirementStatus| of_tier.iter().filter(|r| r.status == s).count();
            let _ = writeln!(
                out,
                "{:<16} {:>5} {:>5} {:>8} {:>11}",
                tier_name(tier),
                n(RequirementStatus::Pass),
                of_tier.iter().filter(|r| failing(r.status)).count(),
                n(RequirementStatus::Skipped),
                n(RequirementStatus::NotTested)
            );
            for r in of_tier.iter().filter(|r| failing(r.status)) {
                let _ = writeln!(out, "  {} {} ({})", r.status.as_str(), r.id, r.transcripts.join(", "));
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
                Verdict::SkippedButListed(_) => "skipped_but_listed",
            };
            let reason = match &e.verdict {
                Verdict::ExpectedFailure(r) | Verdict::Skipped(r) | Verdict::SkippedButListed(r) => Some(r.clone()),
                Verdict::Passed | Verdict::Failed | Verdict::UnexpectedPass => None,
            };
            let line = json!({"transcript": e.path.display().to_string(), "name": e.outcome.name, "requirements": e.outcome.requirements,
                              "agent": self.agent, "verdict": verdict, "passed": !e.verdict.is_failure(), "failure": e.outcome.failure,
                              "charged": e.outcome.charged, "notTestable": e.outcome.not_testable,
                              "reason": reason, "durationMs": e.outcome.duration.as_millis() as u64});
            let _ = writeln!(out, "{line}");
        }
        for name in &self.unknown_baseline_entries {
            let _ = writeln!(out, "{}", json!({"name": name, "agent": self.agent, "verdict": "unknown_baseline_entry", "passed": false}));
        }
        for id in &self.unexercised {
            let _ = writeln!(out, "{}", json!({"requirement": id, "agent": self.agent, "verdict": "unexercised_mandatory", "passed": false}));
        }
        out
    }

    /// A JUnit XML report: one `testsuite` (the agent), one `testcase` per transcript;
    /// expected failures and skipped transcripts are `skipped` with their reason.
    pub fn junit(&self) -> String {
        let failures = self.count(Verdict::is_failure) + self.unknown_baseline_entries.len() + self.unexercised.len();
        let skipped = self.count(|v| matches!(v, Verdict::ExpectedFailure(_) | Verdict::Skipped(_)));
        let total: f64 = self.entries.iter().map(|e| e.outcome.duration.as_secs_f64()).sum();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites><testsuite name=\"conformance: {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{total:.3}\">",
            xml(&self.agent),
            self.entries.len() + self.unknown_baseline_entries.len() + self.unexercised.len()
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
                Verdict::SkippedButListed(why) => {
                    let _ = writeln!(out, "><failure message=\"skipped ({}), but the baseline lists it; remove the entry\"/></testcase>", xml(why));
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
        for id in &self.unexercised {
            let _ = writeln!(out, "  <testcase classname=\"coverage\" name=\"{}\"><failure message=\"MANDATORY, but no transcript of the run exercised it\"/></testcase>", xml(id));
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

    fn outcome(name: &str, requirements: &[&str], failure: Option<(&str, &[&str])>) -> Outcome {
        Outcome {
            name: name.into(),
            requirements: requirements.iter().map(|r| (*r).to_owned()).collect(),
            dialect: Some("rpc".into()),
            failure: failure.map(|(f, _)| f.to_owned()),
            charged: failure.map(|(_, c)| c.iter().map(|r| (*r).to_owned()).collect()).unwrap_or_default(),
            not_testable: false,
            // A passing transcript's lines held for all it names.
            checked: if failure.is_none() { requirements.iter().map(|r| (*r).to_owned()).collect() } else { Vec::new() },
            skipped: None,
            duration: Duration::from_millis(5),
            last_frames: vec![json!({"type": "x<y"})],
        }
    }

    fn entry(name: &str, failure: Option<&str>, baseline: &Baseline) -> Entry {
        let outcome = outcome(name, &["R-1"], failure.map(|f| (f, &["R-1"][..])));
        let verdict = match (failure, baseline.reason(name)) {
            (None, None) => Verdict::Passed,
            (None, Some(_)) => Verdict::UnexpectedPass,
            (Some(_), Some(r)) => Verdict::ExpectedFailure(r.into()),
            (Some(_), None) => Verdict::Failed,
        };
        Entry { path: PathBuf::from(format!("{name}.jsonl")), outcome, verdict }
    }

    /// A registry of three rpc requirements: two MANDATORY, one ADVISORY.
    fn registry() -> Registry {
        let one = |id: &str, tier: &str| {
            format!(r#"{{"id": "{id}", "dialect": "rpc", "tier": "{tier}", "source": "s", "document": "pi-rpc", "quote": "q", "text": "t"}}"#)
        };
        let text = format!(r#"{{"requirements": [{}, {}, {}]}}"#, one("R-1", "MANDATORY"), one("R-2", "MANDATORY"), one("R-3", "ADVISORY"));
        Registry::parse(&text, "test").unwrap()
    }

    #[test]
    fn baselines_parse_and_reject_malformed_lines() {
        let b = Baseline::parse("# pi\nrpc-ready  # pi sends no ready\n\nrpc-other\n").unwrap();
        assert_eq!(b.reason("rpc-ready"), Some("pi sends no ready"));
        assert_eq!(b.reason("rpc-other"), Some(""));
        assert!(Baseline::parse("two words # x").unwrap_err().to_string().contains("line 1"));
        assert!(Baseline::parse("a\na").unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn expected_failures_pass_and_stale_entries_fail_the_run() {
        let b = Baseline::parse("known # a known gap\nfixed # was a gap").unwrap();
        let report = Report {
            agent: "pi".into(),
            entries: vec![entry("ok", None, &b), entry("known", Some("line 3: differs"), &b)],
            unknown_baseline_entries: vec![],
            unexercised: vec![],
            coverage_judged: false,
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
    fn an_unexercised_mandatory_requirement_fails_the_run() {
        let registry = registry();
        // R-2 is named only by a transcript that was skipped (say, for an AGENTWIRE id beside it).
        let mut skipped = outcome("t2", &["R-2"], None);
        skipped.skipped = Some("AGENTWIRE tier".into());
        let entries = vec![
            Entry { path: "t1.jsonl".into(), outcome: outcome("t1", &["R-1"], None), verdict: Verdict::Passed },
            Entry { path: "t2.jsonl".into(), outcome: skipped, verdict: Verdict::Skipped("AGENTWIRE tier".into()) },
        ];
        let mut report = Report { agent: "pi".into(), entries, unknown_baseline_entries: vec![], unexercised: vec![], coverage_judged: false };
        assert!(report.passed(), "coverage is judged only when asked");
        report.judge_coverage(&registry);
        assert_eq!(report.unexercised, ["R-2"], "R-3 is ADVISORY: not being exercised is no failure");
        assert!(!report.passed());
        assert!(report.text().contains("FAIL R-2: MANDATORY, but no transcript of the run exercised it"), "{}", report.text());
        let statuses: Vec<&str> = report.requirement_results(&registry).iter().map(|r| r.status.as_str()).collect();
        assert_eq!(statuses, ["PASS", "UNEXERCISED", "NOT_TESTED"]);
    }

    #[test]
    fn a_failure_is_charged_to_its_line_and_a_setup_failure_is_not_testable() {
        let registry = registry();
        // The transcript names R-1 and R-3; its R-3 line failed after its R-1 lines held: R-1 is
        // not marked failed, and was exercised.
        let mut advisory = outcome("t", &["R-1", "R-3"], Some(("line 9: differs", &["R-3"])));
        advisory.checked = vec!["R-1".into()];
        let mut setup = outcome("u", &["R-2"], Some(("line 3: no session", &["R-2"])));
        setup.not_testable = true;
        let entries = vec![
            Entry { path: "t.jsonl".into(), outcome: advisory, verdict: Verdict::Failed },
            Entry { path: "u.jsonl".into(), outcome: setup, verdict: Verdict::Failed },
        ];
        let report = Report { agent: "pi".into(), entries, unknown_baseline_entries: vec![], unexercised: vec![], coverage_judged: false };
        let statuses: Vec<&str> = report.requirement_results(&registry).iter().map(|r| r.status.as_str()).collect();
        assert_eq!(statuses, ["PASS", "NOT_TESTABLE", "FAIL"]);
    }

    #[test]
    fn a_stale_baseline_entry_fails_the_run_and_a_single_check_entry_must_match_its_check() {
        let b = Baseline::parse("t:R-3  # an advisory detail\nu:R-1  # the wrong check\ngone  # renamed").unwrap();
        assert_eq!(b.entry("t"), Some(&BaselineEntry { check: Some("R-3".into()), reason: "an advisory detail".into() }));
        assert!(Baseline::parse("t:  # x").is_err());
        let judge = |mut o: Outcome| verdict(&mut o, Some(&b));
        assert_eq!(judge(outcome("t", &["R-1", "R-3"], Some(("line 9", &["R-3"])))), Verdict::ExpectedFailure("R-3: an advisory detail".into()));
        assert_eq!(judge(outcome("u", &["R-1", "R-3"], Some(("line 9", &["R-3"])))), Verdict::Failed, "fails on another check than listed");
        assert_eq!(judge(outcome("t", &["R-1", "R-3"], None)), Verdict::UnexpectedPass, "a listed check that passes is stale");
        let report = Report {
            agent: "pi".into(),
            entries: vec![Entry { path: "t.jsonl".into(), outcome: outcome("t", &["R-3"], None), verdict: Verdict::UnexpectedPass }],
            unknown_baseline_entries: vec!["gone".into()],
            unexercised: vec![],
            coverage_judged: false,
        };
        assert!(!report.passed());
        let text = report.text();
        assert!(text.contains("FAIL t (t.jsonl): passes now; remove it from the baseline"), "{text}");
        assert!(text.contains("FAIL baseline entry gone: no such transcript; remove it"), "{text}");
    }

    #[test]
    fn a_passing_transcript_whose_lines_checked_nothing_exercises_nothing() {
        let registry = registry();
        // It passed, names R-1, and no checking line of it held (only `in` lines, say).
        let mut vacuous = outcome("t", &["R-1"], None);
        vacuous.checked.clear();
        let entries = vec![Entry { path: "t.jsonl".into(), outcome: vacuous, verdict: Verdict::Passed }];
        let mut report = Report { agent: "pi".into(), entries, unknown_baseline_entries: vec![], unexercised: vec![], coverage_judged: false };
        assert_eq!(report.requirement_results(&registry)[0].status, RequirementStatus::NotTested);
        report.judge_coverage(&registry);
        assert_eq!(report.unexercised, ["R-1", "R-2"]);
        assert!(!report.passed());
    }

    #[test]
    fn a_baseline_entry_for_a_skipped_transcript_is_stale() {
        let b = Baseline::parse("t  # fails on pi\nu:R-1  # one check").unwrap();
        let skipped = |name: &str| {
            let mut o = outcome(name, &["R-1"], None);
            o.skipped = Some("AGENTWIRE tier".into());
            o
        };
        let (mut t, mut u, mut v) = (skipped("t"), skipped("u"), skipped("v"));
        assert_eq!(verdict(&mut t, Some(&b)), Verdict::SkippedButListed("AGENTWIRE tier".into()));
        assert_eq!(verdict(&mut u, Some(&b)), Verdict::SkippedButListed("AGENTWIRE tier".into()));
        assert_eq!(verdict(&mut v, Some(&b)), Verdict::Skipped("AGENTWIRE tier".into()), "an unlisted skip is no failure");
        let entries = vec![Entry { path: "t.jsonl".into(), outcome: t, verdict: Verdict::SkippedButListed("AGENTWIRE tier".into()) }];
        let report = Report { agent: "pi".into(), entries, unknown_baseline_entries: vec![], unexercised: vec![], coverage_judged: false };
        assert!(!report.passed());
        assert!(report.text().contains("FAIL t (t.jsonl): skipped (AGENTWIRE tier), but the baseline lists it; remove the entry"), "{}", report.text());
    }

    #[test]
    fn junit_escapes_and_counts() {
        let b = Baseline::default();
        let report =
            Report { agent: "a&b".into(), entries: vec![entry("ok", None, &b), entry("bad", Some("line 2: <diff>\nmore"), &b)], unknown_baseline_entries: vec![], unexercised: vec![], coverage_judged: false };
        let x = report.junit();
        assert!(x.contains("name=\"conformance: a&amp;b\" tests=\"2\" failures=\"1\""));
        assert!(x.contains("<failure message=\"line 2: &lt;diff&gt;\">"));
        assert!(x.contains("{&quot;type&quot;:&quot;x&lt;y&quot;}"));
        assert_eq!(x.matches("<testcase").count(), 2);
    }
}
