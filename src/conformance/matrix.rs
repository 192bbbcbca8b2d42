//! The compatibility matrix: one corpus run against several agents (one adapter each, each
//! with its baseline), reported as a Markdown table of requirements × agents and as JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::requirements::{tier_name, Registry};
use super::runner::{load_adapter, AgentUnderTest, RunOptions};
use super::suite::{collect, find_baseline, run_suite, Baseline, Report, RequirementStatus, Verdict};

/// A matrix that could not be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MatrixError {
    /// An adapter or baseline file is unusable (the message names it).
    #[error("{0}")]
    Input(#[from] super::error::InputError),
    /// The corpus directory holds no transcripts.
    #[error("{}: no transcripts", .0.display())]
    Empty(PathBuf),
}

/// One agent's column.
#[derive(Debug, Clone)]
pub struct Column {
    /// The adapter file.
    pub adapter: PathBuf,
    /// The first line its `versionCommand` printed, when it has one and it ran.
    pub version: Option<String>,
    /// The baseline used, if the corpus has one for the agent.
    pub baseline: Option<PathBuf>,
    /// The run.
    pub report: Report,
}

impl Column {
    /// Transcripts that applied to the agent (not skipped), and those of them that passed.
    pub fn applicable(&self) -> (usize, usize) {
        let applied = self.report.entries.iter().filter(|e| !matches!(e.verdict, Verdict::Skipped(_) | Verdict::SkippedButListed(_))).count();
        let passed = self.report.entries.iter().filter(|e| e.verdict == Verdict::Passed).count();
        (applied, passed)
    }

    /// Per dialect run (`acp`, `acp-v2`, `rpc`, `wire`, in that order): transcripts that applied
    /// and those that passed, so an agent's ACP v1 and v2 figures are read apart.
    pub fn by_dialect(&self) -> Vec<(String, usize, usize)> {
        let mut out: Vec<(String, usize, usize)> = Vec::new();
        for dialect in ["acp", "acp-v2", "rpc", "wire"] {
            let ran: Vec<&super::suite::Entry> = self.report.entries.iter().filter(|e| e.outcome.dialect.as_deref() == Some(dialect) && !matches!(e.verdict, Verdict::Skipped(_) | Verdict::SkippedButListed(_))).collect();
            if !ran.is_empty() {
                out.push((dialect.to_owned(), ran.len(), ran.iter().filter(|e| e.verdict == Verdict::Passed).count()));
            }
        }
        out
    }
}

/// How to run a matrix.
#[derive(Debug, Clone)]
pub struct MatrixOptions {
    /// The adapter files, one column each.
    pub adapters: Vec<PathBuf>,
    /// The corpus directory (its `baselines/<agent>.txt` are used).
    pub dir: PathBuf,
    /// This agentwire binary (`{{agentwire}}` in adapters).
    pub agentwire: PathBuf,
    /// Per expected frame.
    pub frame_timeout: Duration,
    /// Transcripts run at the same time, per agent.
    pub jobs: usize,
}

/// The first line a version command prints (on stdout, else stderr), if it runs;
/// `{{agentwire}}` stands for this binary.
fn version_of(command: &[String], agentwire: &Path) -> Option<String> {
    let argv: Vec<String> = command.iter().map(|a| a.replace("{{agentwire}}", &agentwire.display().to_string())).collect();
    let (program, args) = argv.split_first()?;
    let output = std::process::Command::new(program).args(args).stdin(std::process::Stdio::null()).output().ok()?;
    let first = |bytes: &[u8]| String::from_utf8_lossy(bytes).lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned);
    first(&output.stdout).or_else(|| first(&output.stderr))
}

/// Runs the corpus against every adapter in turn.
pub fn run_matrix(options: &MatrixOptions, progress: &(dyn Fn(&str) + Sync)) -> Result<Vec<Column>, MatrixError> {
    let files = collect(std::slice::from_ref(&options.dir), None);
    if files.is_empty() {
        return Err(MatrixError::Empty(options.dir.clone()));
    }
    let mut columns = Vec::new();
    for path in &options.adapters {
        let adapter = load_adapter(path).map_err(MatrixError::Input)?;
        let name = adapter.name.to_string();
        progress(&name);
        let version = adapter.version_command.as_deref().and_then(|c| version_of(c, &options.agentwire));
        let baseline_path = find_baseline(&options.dir, &name);
        let baseline = baseline_path.as_deref().map(Baseline::load).transpose().map_err(MatrixError::Input)?;
        let run = RunOptions { agent: AgentUnderTest::Adapted { adapter: Box::new(adapter), agentwire: options.agentwire.clone() }, frame_timeout: options.frame_timeout };
        let mut report = run_suite(&files, &run, baseline.as_ref(), options.jobs);
        // A corpus root (it holds the registry) must exercise every MANDATORY requirement of
        // the dialects the agent speaks.
        if let (true, Ok(registry)) = (options.dir.join("requirements.json").is_file(), Registry::embedded()) {
            report.judge_coverage(registry);
        }
        columns.push(Column { adapter: path.clone(), version, baseline: baseline_path, report });
    }
    Ok(columns)
}

/// How the summary names a dialect run.
fn dialect_label(dialect: &str) -> &str {
    match dialect {
        "acp" => "ACP v1",
        "acp-v2" => "ACP v2",
        other => other,
    }
}

/// A table cell.
fn cell(status: RequirementStatus) -> &'static str {
    match status {
        RequirementStatus::Pass => "pass",
        RequirementStatus::Fail => "**FAIL**",
        RequirementStatus::NotTestable => "**not testable**",
        RequirementStatus::Unexercised => "**unexercised**",
        RequirementStatus::Skipped => "skip",
        RequirementStatus::NotTested => "—",
    }
}

/// Where the agent matrix starts in `docs/compatibility.md`; what lies outside the markers (the
/// client matrix, written by another command) is kept when the agent matrix is written again.
pub const AGENTS_BEGIN: &str = "<!-- agent matrix: written by `agentwire conformance matrix`; do not edit by hand -->";
/// Where the agent matrix ends.
pub const AGENTS_END: &str = "<!-- end of the agent matrix -->";

/// The file with the agent matrix `section` in place: between the markers of `existing` when it
/// has them (the rest is kept), else a new file whose client part is left empty.
pub fn splice(existing: Option<&str>, section: &str) -> String {
    let marked = existing.and_then(|text| {
        let start = text.find(AGENTS_BEGIN)?;
        let end = text[start..].find(AGENTS_END)? + start + AGENTS_END.len();
        Some((&text[..start], &text[end..]))
    });
    let (before, after) = marked.unwrap_or((
        "# Compatibility matrix\n\n",
        "\n\n<!-- The client matrix (`agentwire conformance client`) goes below, outside the agent matrix markers. -->\n",
    ));
    format!("{before}{AGENTS_BEGIN}\n{}\n{AGENTS_END}{after}", section.trim_end())
}

/// The Markdown report: when and against what it ran, a summary per agent, then one row per
/// requirement that some agent was tested on (the untested ids listed after the table).
pub fn markdown(columns: &[Column], registry: &Registry, generated_at: &str, command: &str) -> String {
    let mut out = String::from("## Agents\n\n");
    let _ = writeln!(out, "Generated {generated_at} by `{command}` (do not edit by hand: run it again).\n");
    out.push_str("| agent | version | applicable transcripts | pass outright | by dialect (passed / applicable) | baselined failures | run |\n|---|---|---|---|---|---|---|\n");
    for c in columns {
        let (applied, passed) = c.applicable();
        let xfail = c.report.entries.iter().filter(|e| matches!(e.verdict, Verdict::ExpectedFailure(_))).count();
        let share = (passed * 100).checked_div(applied).unwrap_or(0);
        let verdict = if c.report.passed() { "as its baseline expects" } else { "**differs from its baseline**" };
        let split: Vec<String> = c.by_dialect().iter().map(|(d, applied, passed)| format!("{}: {passed} / {applied}", dialect_label(d))).collect();
        let split = if split.is_empty() { "—".to_owned() } else { split.join(", ") };
        let _ = writeln!(out, "| {} | {} | {applied} | {passed} ({share} %) | {split} | {xfail} | {verdict} |", c.report.agent, c.version.as_deref().unwrap_or("?"));
    }
    let results: Vec<Vec<super::suite::RequirementResult>> = columns.iter().map(|c| c.report.requirement_results(registry)).collect();
    out.push_str("\n| requirement | tier |");
    for c in columns {
        let _ = write!(out, " {} |", c.report.agent);
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(columns.len()));
    out.push('\n');
    let mut untested = Vec::new();
    for (row, r) in registry.iter().enumerate() {
        let statuses: Vec<RequirementStatus> = results.iter().map(|col| col[row].status).collect();
        if statuses.iter().all(|s| *s == RequirementStatus::NotTested) {
            untested.push(r.id.to_string());
            continue;
        }
        let _ = write!(out, "| {} | {} |", r.id.as_str(), tier_name(r.tier));
        for s in statuses {
            let _ = write!(out, " {} |", cell(s));
        }
        out.push('\n');
    }
    out.push_str("\n`pass`: every transcript naming the requirement passed; `**FAIL**`: a transcript failed on a line charged to it (the agent's baseline says why, citing the id); `**not testable**`: a line setting up its precondition failed; `**unexercised**`: MANDATORY, yet no transcript exercised it (counts as failed); `skip`: not asked of the agent (another dialect, an `AGENTWIRE`-tier choice, or a capability it does not have).\n");
    if !untested.is_empty() {
        let _ = writeln!(out, "\nNot tested by this corpus: {}.", untested.join(", "));
    }
    for c in columns {
        let failures: Vec<String> = c
            .report
            .entries
            .iter()
            .filter_map(|e| match &e.verdict {
                Verdict::ExpectedFailure(why) => Some(format!("- `{}`: {why}", e.outcome.name)),
                Verdict::Failed => Some(format!("- `{}`: fails, not in the baseline", e.outcome.name)),
                Verdict::SkippedButListed(why) => Some(format!("- `{}`: skipped ({why}) but listed in the baseline", e.outcome.name)),
                Verdict::Passed | Verdict::UnexpectedPass | Verdict::Skipped(_) => None,
            })
            .collect();
        if !failures.is_empty() {
            let _ = writeln!(out, "\n### {}: failures\n\n{}", c.report.agent, failures.join("\n"));
        }
    }
    out
}

/// The JSON report: the agents, then each requirement's tier and status per agent.
pub fn json(columns: &[Column], registry: &Registry, generated_at: &str) -> Value {
    let results: Vec<Vec<super::suite::RequirementResult>> = columns.iter().map(|c| c.report.requirement_results(registry)).collect();
    let agents: Vec<Value> = columns
        .iter()
        .map(|c| {
            let (applied, passed) = c.applicable();
            json!({"agent": c.report.agent, "version": c.version, "adapter": c.adapter.display().to_string(),
                   "baseline": c.baseline.as_ref().map(|b| b.display().to_string()), "asBaselineExpects": c.report.passed(),
                   "applicable": applied, "passed": passed,
                   "byDialect": c.by_dialect().iter().map(|(d, applied, passed)| json!({"dialect": d, "applicable": applied, "passed": passed})).collect::<Vec<_>>()})
        })
        .collect();
    let requirements: Vec<Value> = registry
        .iter()
        .enumerate()
        .map(|(row, r)| {
            let status: serde_json::Map<String, Value> = columns.iter().zip(&results).map(|(c, col)| (c.report.agent.clone(), json!(col[row].status.as_str()))).collect();
            json!({"requirement": r.id.as_str(), "tier": tier_name(r.tier), "text": r.text.as_str(), "status": status})
        })
        .collect();
    json!({"generatedAt": generated_at, "agents": agents, "requirements": requirements})
}

/// `FILE.json` beside `FILE.md`.
pub fn json_path(markdown: &Path) -> PathBuf {
    markdown.with_extension("json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_the_agent_matrix_again_keeps_what_lies_outside_its_markers() {
        let first = splice(None, "## Agents\n\nv1\n");
        assert!(first.starts_with("# Compatibility matrix\n\n<!-- agent matrix"), "{first}");
        let with_clients = format!("{first}## Clients\n\nkept\n");
        let second = splice(Some(&with_clients), "## Agents\n\nv2\n");
        assert!(second.contains("v2") && !second.contains("v1"), "{second}");
        assert!(second.ends_with("## Clients\n\nkept\n"), "{second}");
    }
}
