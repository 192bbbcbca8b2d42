//! Redaction of secrets in error texts leaving the provider layer. A provider's error body can
//! quote the key it was sent ("Incorrect API key provided: sk-…"); from here it would reach
//! events, responses, session files, exports and logs. So every error a provider reports goes
//! through [`redact`] first: the configured secrets (the API key, header values) and anything
//! shaped like a key are replaced by `[redacted]` (a key-shaped token keeps its well-known
//! prefix, so "an `sk-` key" is still readable).

/// Prefixes of well-known key formats (OpenAI, Anthropic, GitHub, Slack, AWS, Google, GitLab,
/// Hugging Face, Stripe, JWTs).
const KEY_PREFIXES: &[&str] = &[
    "sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxb-", "xoxp-", "xoxa-", "xoxs-", "AKIA", "ASIA", "AIza", "glpat-",
    "hf_", "eyJ",
];

/// Shortest configured secret that is replaced wherever it occurs (shorter values, such as a
/// header `1`, would redact ordinary words).
const MIN_SECRET_LEN: usize = 6;
/// Shortest key-shaped token (prefix included).
const MIN_KEY_LEN: usize = 16;
/// Tokens at least this long made of letters and digits (both) are taken for keys too.
const MIN_OPAQUE_LEN: usize = 40;

const REDACTED: &str = "[redacted]";

/// `text` with every secret in `secrets` and every key-shaped token replaced.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_owned();
    let mut secrets: Vec<&str> = secrets.iter().copied().filter(|s| s.trim().len() >= MIN_SECRET_LEN).collect();
    // Longest first, so a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets {
        out = out.replace(secret, REDACTED);
    }
    redact_key_shaped(&out)
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '=' | '+' | '/')
}

fn redact_key_shaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_token_char) {
        out.push_str(&rest[..start]);
        let token_len = rest[start..].find(|c: char| !is_token_char(c)).unwrap_or(rest.len() - start);
        let token = &rest[start..start + token_len];
        out.push_str(&redact_token(token));
        rest = &rest[start + token_len..];
    }
    out.push_str(rest);
    out
}

fn redact_token(token: &str) -> String {
    // Trailing sentence punctuation is not part of a key.
    let core = token.trim_end_matches(['.', '=', '/', '+', '-']);
    let tail = &token[core.len()..];
    if let Some(prefix) = KEY_PREFIXES.iter().find(|p| core.starts_with(**p)) {
        if core.len() >= MIN_KEY_LEN {
            return format!("{prefix}{REDACTED}{tail}");
        }
    }
    let opaque = core.len() >= MIN_OPAQUE_LEN && core.chars().any(|c| c.is_ascii_digit()) && core.chars().any(|c| c.is_ascii_alphabetic()) && !core.contains('/');
    if opaque {
        return format!("{REDACTED}{tail}");
    }
    token.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_secrets_and_key_shaped_tokens_are_replaced() {
        let body = "401 Incorrect API key provided: sk-proj-abcDEF1234567890xyz. You can find your API key at https://platform.openai.com/account/api-keys.";
        assert_eq!(redact(body, &[]), "401 Incorrect API key provided: sk-[redacted]. You can find your API key at https://platform.openai.com/account/api-keys.");
        assert_eq!(redact("bad header value my-custom-token-value!", &["my-custom-token-value"]), "bad header value [redacted]!");
        assert_eq!(redact("token ghp_0123456789abcdefABCDEF0123456789abcd", &[]), "token ghp_[redacted]");
        assert_eq!(redact("id 0123456789abcdef0123456789abcdef01234567 rejected", &[]), "id [redacted] rejected");
        // Ordinary words, short ids, URLs and numbers stay.
        for plain in ["429 Rate limit reached for gpt-4o in organization org-123", "context length exceeded: 200000 > 128000 tokens", "see https://docs.anthropic.com/en/api/errors"] {
            assert_eq!(redact(plain, &["1"]), plain);
        }
    }
}
