//! An MCP `CallToolResult` as the core's tool output: text stays text, images stay images (of a
//! type the model takes), resource links, embedded resources and audio become text that says
//! what they are, `structuredContent` is kept in the details (and is the text when the server
//! sent no content), `isError` is a failed call. Text goes through the byte and line budget of
//! `bash` ([`crate::tools::shell::TAIL_BYTES`], [`crate::tools::shell::TAIL_LINES`]).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::json;

use crate::protocol::{ImageContent, TextOrImageContent};
use crate::tools::shell::{TAIL_BYTES, TAIL_LINES};
use crate::tools::{text_content, ToolOutput};

/// The core's output for `server`'s `tool` answering `result`.
pub(super) fn to_output(server: &str, tool: &str, result: CallToolResult) -> ToolOutput {
    let mut content = Vec::new();
    let mut budget = Budget::default();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => budget.push(&mut content, t.text),
            ContentBlock::Image(image) => match image.mime_type.parse() {
                Ok(mime) => content.push(TextOrImageContent::Image(ImageContent::new(image.data, mime))),
                Err(_) => budget.push(&mut content, format!("[image of type {} ({} bytes of base64), not shown: the type is not one the model takes]", image.mime_type, image.data.len())),
            },
            ContentBlock::Audio(audio) => budget.push(&mut content, format!("[audio of type {} ({} bytes of base64), not shown]", audio.mime_type, audio.data.len())),
            ContentBlock::ResourceLink(link) => {
                let mut text = format!("[resource link] {} <{}>", link.name, link.uri);
                if let Some(mime) = &link.mime_type {
                    text.push_str(&format!(" ({mime})"));
                }
                if let Some(description) = &link.description {
                    text.push_str(&format!(": {description}"));
                }
                budget.push(&mut content, text);
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => budget.push(&mut content, format!("<resource uri=\"{uri}\">\n{text}\n</resource>")),
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    let mime = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                    budget.push(&mut content, format!("[binary resource {uri} ({mime}, {} bytes of base64)]", blob.len()));
                }
                // rmcp's enums are non-exhaustive: a kind added later is named, not dropped.
                other => budget.push(&mut content, format!("[resource of a kind agentwire does not know: {}]", serde_json::to_string(&other).unwrap_or_default())),
            },
            other => budget.push(&mut content, format!("[content of a kind agentwire does not know: {}]", serde_json::to_string(&other).unwrap_or_default())),
        }
    }
    let structured = result.structured_content;
    if content.is_empty() {
        match &structured {
            Some(value) => budget.push(&mut content, value.to_string()),
            None => content.push(text_content("(no output)")),
        }
    }
    let mut details = json!({"server": server, "tool": tool, "truncated": budget.truncated});
    if let Some(value) = structured {
        details["structuredContent"] = value;
    }
    ToolOutput { content, details: Some(details), is_error: result.is_error.unwrap_or(false), change: None }
}

/// What is left of the text budget.
#[derive(Debug)]
struct Budget {
    bytes: usize,
    lines: usize,
    truncated: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Self { bytes: TAIL_BYTES, lines: TAIL_LINES, truncated: false }
    }
}

impl Budget {
    /// Adds `text` as a text block, cut to what is left (at a character boundary, with a note).
    fn push(&mut self, content: &mut Vec<TextOrImageContent>, text: String) {
        if self.truncated {
            return;
        }
        let line_cut = text.match_indices('\n').nth(self.lines).map_or(text.len(), |(at, _)| at);
        let mut cut = line_cut.min(self.bytes);
        if cut >= text.len() {
            self.bytes -= text.len();
            self.lines -= text.matches('\n').count();
            content.push(text_content(text));
            return;
        }
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.truncated = true;
        let total = text.len();
        content.push(text_content(format!("{}\n[output truncated: the tool's output exceeds {TAIL_BYTES} bytes or {TAIL_LINES} lines; {total} bytes in this block]", &text[..cut])));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{Resource, TextContent};

    fn texts(out: &ToolOutput) -> Vec<String> {
        out.content
            .iter()
            .map(|c| match c {
                TextOrImageContent::Text(t) => t.text.clone(),
                TextOrImageContent::Image(i) => format!("image:{}", serde_json::to_value(&i.mime_type).unwrap().as_str().unwrap()),
            })
            .collect()
    }

    #[test]
    fn every_content_kind_maps_and_is_error_fails_the_call() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::Text(TextContent::new("hi")),
            ContentBlock::Image(rmcp::model::ImageContent::new("AAAA", "image/png")),
            ContentBlock::ResourceLink(Resource::new("file:///a.txt", "a.txt")),
            ContentBlock::Resource(rmcp::model::EmbeddedResource::new(ResourceContents::text("body", "mem://x"))),
        ]);
        result.structured_content = Some(json!({"n": 5}));
        let out = to_output("s", "t", result.clone());
        assert!(!out.is_error);
        let t = texts(&out);
        assert_eq!(t[0], "hi");
        assert_eq!(t[1], "image:image/png");
        assert!(t[2].contains("file:///a.txt"), "{t:?}");
        assert!(t[3].contains("mem://x") && t[3].contains("body"), "{t:?}");
        assert_eq!(out.details.as_ref().unwrap()["structuredContent"], json!({"n": 5}));
        result.is_error = Some(true);
        assert!(to_output("s", "t", result).is_error);
        let mut only_structured = CallToolResult::success(Vec::new());
        only_structured.structured_content = Some(json!({"sum": 5}));
        assert_eq!(texts(&to_output("s", "t", only_structured)), ["{\"sum\":5}"]);
    }

    #[test]
    fn text_goes_through_the_bash_budget() {
        let big = "é".repeat(TAIL_BYTES);
        let out = to_output("s", "t", CallToolResult::success(vec![ContentBlock::Text(TextContent::new(big)), ContentBlock::Text(TextContent::new("after"))]));
        let t = texts(&out);
        assert_eq!(t.len(), 1, "nothing after the cut");
        assert!(t[0].len() < TAIL_BYTES + 200 && t[0].contains("[output truncated"), "{}", t[0].len());
        assert_eq!(out.details.unwrap()["truncated"], true);
    }
}
