//! `export_html`: the conversation as one self-contained HTML page (inline CSS, no scripts, no
//! external assets). Every piece of text is escaped, so a `<script>` in a message or a tool
//! output is shown, never run; long outputs fold into `<details>`.

use std::fmt::Write as _;

use crate::protocol::*;

/// Outputs longer than this many lines are collapsed.
const FOLD_LINES: usize = 12;

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn block(out: &mut String, class: &str, title: &str, body: &str) {
    let _ = write!(out, "<section class=\"{class}\"><h2>{}</h2>", escape(title));
    out.push_str(body);
    out.push_str("</section>\n");
}

fn pre(text: &str) -> String {
    let escaped = format!("<pre>{}</pre>", escape(text));
    let lines = text.lines().count();
    if lines > FOLD_LINES {
        format!("<details><summary>{lines} lines</summary>{escaped}</details>")
    } else {
        escaped
    }
}

fn contents(blocks: &[TextOrImageContent]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            TextOrImageContent::Text(t) => pre(&t.text),
            TextOrImageContent::Image(i) => {
                // Only image MIME types become data URLs; anything else is shown as text.
                if i.mime_type.starts_with("image/") && i.data.chars().all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)) {
                    format!("<img alt=\"image\" src=\"data:{};base64,{}\">", escape(&i.mime_type), i.data)
                } else {
                    pre("[image with an unsupported type]")
                }
            }
        })
        .collect()
}

/// The page for a session's messages.
pub fn render(title: &str, messages: &[AgentMessage]) -> String {
    let mut body = String::new();
    for m in messages {
        match m {
            AgentMessage::User(u) => {
                let inner = match &u.content {
                    UserContent::String(s) => pre(s),
                    UserContent::Array(b) => contents(b),
                };
                block(&mut body, "user", "User", &inner);
            }
            AgentMessage::Assistant(a) => {
                let mut inner = String::new();
                for c in &a.content {
                    match c {
                        AssistantContent::Text(t) => inner.push_str(&pre(&t.text)),
                        AssistantContent::Thinking(t) => {
                            let _ = write!(inner, "<details class=\"thinking\"><summary>Thinking</summary>{}</details>", pre(&t.thinking));
                        }
                        AssistantContent::ToolCall(tc) => {
                            let args = serde_json::to_string_pretty(&tc.arguments).unwrap_or_default();
                            let _ = write!(inner, "<div class=\"call\"><b>{}</b> <code>{}</code>{}</div>", escape(&tc.name), escape(&tc.id), pre(&args));
                        }
                    }
                }
                if let Some(e) = &a.error_message {
                    let _ = write!(inner, "<p class=\"error\">{}</p>", escape(e));
                }
                block(&mut body, "assistant", &format!("Assistant ({}/{})", a.provider, a.model), &inner);
            }
            AgentMessage::ToolResult(r) => {
                let class = if r.is_error { "tool error" } else { "tool" };
                block(&mut body, class, &format!("Tool result: {}", r.tool_name.as_str()), &contents(&r.content));
            }
            AgentMessage::BashExecution(b) => {
                let code = b.exit_code.map_or_else(|| "cancelled".to_owned(), |c| format!("exit {c}"));
                block(&mut body, "bash", &format!("$ {} ({code})", b.command), &pre(&b.output));
            }
            AgentMessage::CompactionSummary(c) => block(&mut body, "summary", "Summary of earlier messages", &pre(&c.summary)),
            AgentMessage::BranchSummary(b) => block(&mut body, "summary", "Summary of another branch", &pre(&b.summary)),
            AgentMessage::System(s) => {
                let inner = match &s.content {
                    UserContent::String(text) => pre(text),
                    UserContent::Array(b) => contents(b),
                };
                block(&mut body, "system", "System prompt", &inner);
            }
            AgentMessage::Custom(c) => {
                let inner = match &c.content {
                    UserContent::String(s) => pre(s),
                    UserContent::Array(b) => contents(b),
                };
                block(&mut body, "custom", &format!("Custom: {}", c.custom_type.as_str()), &inner);
            }
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n<style>{CSS}</style></head>\n<body><h1>{title}</h1>\n{body}</body></html>\n",
        title = escape(title)
    )
}

const CSS: &str = "body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f;background:#fafafa}\
h1{font-size:1.4rem}h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.05em;color:#666;margin:0 0 .4rem}\
section{border-radius:8px;padding:.8rem 1rem;margin:.8rem 0;background:#fff;border:1px solid #e3e3e6}\
section.user{border-left:4px solid #3b82f6}section.assistant{border-left:4px solid #10b981}\
section.tool,section.bash{border-left:4px solid #a855f7}section.error,.error{color:#b91c1c}\
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f6;padding:.5rem .7rem;border-radius:6px;margin:.3rem 0}\
details.thinking summary{color:#666;font-style:italic}img{max-width:100%}.call{margin:.4rem 0}";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hostile_content_is_escaped_and_long_output_folds() {
        let messages: Vec<AgentMessage> = serde_json::from_value(json!([
            {"role":"user","content":[{"type":"text","text":"<script>alert(1)</script>"}],"timestamp":1},
            {"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"\"><img src=x onerror=alert(2)>"}],"isError":false,"timestamp":2},
            {"role":"bashExecution","command":"seq 1 50","output":(1..=50).map(|i| format!("{i}\n")).collect::<String>(),"cancelled":false,"truncated":false,"timestamp":3}
        ]))
        .unwrap();
        let html = render("t <b>", &messages);
        assert!(!html.contains("<script>") && html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<img src=x") && html.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
        assert!(html.contains("<details><summary>50 lines</summary>"));
        assert!(html.contains("<title>t &lt;b&gt;</title>"));
    }
}
