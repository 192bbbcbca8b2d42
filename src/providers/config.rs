//! Which models exist: the offline model (always), built-in entries for the common providers
//! whose API key variable is set, and the models file in the config dir.
//!
//! Config dir: `--config-dir`, else `$AGENTWIRE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/agentwire`,
//! else `~/.config/agentwire`. The models file is `models.json` there
//! (`schema/models-file.schema.json`); a provider in the file replaces a built-in of the same name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::anthropic::AnthropicProvider;
use super::offline::{OfflineModel, OfflineProvider};
use super::openai::OpenAiProvider;
use super::{offline_model_info, Api, Endpoint, ModelSpec};
use crate::protocol::{validate::validator, Model, ModelsFile, ProviderConfig, ProviderConfigApi};

/// The config dir.
pub fn config_dir(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = flag {
        return Some(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("AGENTWIRE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("agentwire"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config/agentwire"))
}

/// Built-in providers, used when their key variable is set (prices are defaults; a models file
/// entry of the same provider name replaces them).
fn builtins() -> Vec<(String, ProviderConfig)> {
    let entries = json!([
        ["openai", {"api": "openai-completions", "baseUrl": "https://api.openai.com/v1", "apiKeyEnv": "OPENAI_API_KEY", "models": [
            {"id": "gpt-4.1", "name": "GPT-4.1", "contextWindow": 1_047_576, "maxTokens": 32768, "input": ["text", "image"], "cost": {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0}},
            {"id": "gpt-4.1-mini", "name": "GPT-4.1 mini", "contextWindow": 1_047_576, "maxTokens": 32768, "input": ["text", "image"], "cost": {"input": 0.4, "output": 1.6, "cacheRead": 0.1, "cacheWrite": 0}},
            {"id": "o4-mini", "name": "o4-mini", "contextWindow": 200_000, "maxTokens": 100_000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 1.1, "output": 4.4, "cacheRead": 0.275, "cacheWrite": 0}}
        ]}],
        ["anthropic", {"api": "anthropic-messages", "baseUrl": "https://api.anthropic.com", "apiKeyEnv": "ANTHROPIC_API_KEY", "models": [
            {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "contextWindow": 200_000, "maxTokens": 64000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}},
            {"id": "claude-haiku-4-5", "name": "Claude Haiku 4.5", "contextWindow": 200_000, "maxTokens": 64000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 1.0, "output": 5.0, "cacheRead": 0.1, "cacheWrite": 1.25}}
        ]}],
        ["openrouter", {"api": "openai-completions", "baseUrl": "https://openrouter.ai/api/v1", "apiKeyEnv": "OPENROUTER_API_KEY", "models": [
            {"id": "openai/gpt-4.1-mini", "name": "GPT-4.1 mini (OpenRouter)", "contextWindow": 1_047_576, "maxTokens": 32768, "input": ["text", "image"], "cost": {"input": 0.4, "output": 1.6, "cacheRead": 0.1, "cacheWrite": 0}},
            {"id": "anthropic/claude-sonnet-4.5", "name": "Claude Sonnet 4.5 (OpenRouter)", "contextWindow": 200_000, "maxTokens": 64000, "input": ["text", "image"], "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}}
        ]}]
    ]);
    entries
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (e[0].as_str().unwrap_or_default().to_owned(), serde_json::from_value(e[1].clone()).expect("built-in provider entries match the schema")))
        .collect()
}

/// The available models and the index of the one to start with.
#[derive(Debug)]
pub struct Catalogue {
    /// Every usable model; the offline model is first.
    pub models: Vec<ModelSpec>,
    /// The model selected at start.
    pub current: usize,
}

/// What `--provider`, `--model`, `--api-key` and `--model-script` say.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Config dir override.
    pub config_dir: Option<PathBuf>,
    /// Provider to select.
    pub provider: Option<String>,
    /// Model id to select.
    pub model: Option<String>,
    /// API key for the selected provider (overrides the configured one; never logged).
    pub api_key: Option<String>,
    /// The offline model's script.
    pub offline: Option<Arc<OfflineModel>>,
}

/// Builds the catalogue; errors say which file or flag is wrong.
pub fn load(selection: &Selection) -> Result<Catalogue, String> {
    let offline = selection.offline.clone().unwrap_or_default();
    let mut models = vec![ModelSpec {
        info: offline_model_info(),
        api: Api::Offline,
        supports_xhigh: false,
        provider: Arc::new(OfflineProvider::new(offline)),
    }];
    let mut providers: Vec<(String, ProviderConfig)> = builtins();
    let mut default_model = None;
    if let Some(dir) = config_dir(selection.config_dir.as_deref()) {
        let path = dir.join("models.json");
        if path.exists() {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let value: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            validator().validate_def("ModelsFile", &value).map_err(|e| format!("{}: {e}", path.display()))?;
            // Providers keep the file's order (the typed map does not).
            let order: Vec<String> = value["providers"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
            let mut file: ModelsFile = serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))?;
            default_model = file.default_model;
            for name in order {
                if let Some(config) = file.providers.remove(&name) {
                    providers.retain(|(n, _)| *n != name);
                    providers.push((name, config));
                }
            }
        }
    }
    for (name, config) in providers {
        let explicit = selection.provider.as_deref() == Some(name.as_str());
        let key = match (&selection.api_key, explicit) {
            (Some(k), true) => Some(k.clone()),
            _ => config.api_key.clone().or_else(|| config.api_key_env.as_ref().and_then(|v| std::env::var(v.as_str()).ok())).filter(|k| !k.is_empty()),
        };
        // Providers reached with a key variable are usable only when it is set; a literal key,
        // or none at all (local servers such as Ollama), is always usable.
        if key.is_none() && config.api_key_env.is_some() && config.api_key.is_none() {
            continue;
        }
        models.extend(specs(&name, &config, key));
    }
    let wanted = match (&selection.provider, &selection.model) {
        (Some(p), Some(m)) => Some((p.clone(), m.clone())),
        (Some(p), None) => models.iter().find(|s| *s.info.provider == *p).map(|s| (p.clone(), s.info.id.to_string())),
        (None, Some(m)) => models.iter().find(|s| *s.info.id == *m).map(|s| (s.info.provider.to_string(), m.clone())),
        (None, None) => default_model.as_deref().and_then(|d| d.split_once('/')).map(|(p, m)| (p.to_owned(), m.to_owned())),
    };
    let current = match wanted {
        None => 0,
        Some((p, m)) => models
            .iter()
            .position(|s| *s.info.provider == p && *s.info.id == m)
            .ok_or_else(|| format!("Model not found: {p}/{m} (configured: {})", models.iter().map(|s| format!("{}/{}", *s.info.provider, *s.info.id)).collect::<Vec<_>>().join(", ")))?,
    };
    Ok(Catalogue { models, current })
}

fn specs(name: &str, config: &ProviderConfig, key: Option<String>) -> Vec<ModelSpec> {
    let headers: Vec<(String, String)> = config.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    config
        .models
        .iter()
        .map(|m| {
            let api = match config.api {
                ProviderConfigApi::OpenaiCompletions => Api::OpenAiCompletions,
                ProviderConfigApi::AnthropicMessages => Api::AnthropicMessages,
            };
            let reasoning = m.reasoning.unwrap_or(false);
            let max_tokens = m.max_tokens.unwrap_or(8192);
            let info: Model = serde_json::from_value(json!({
                "id": m.id.as_str(), "name": m.name.clone().unwrap_or_else(|| m.id.to_string()), "api": api.name(), "provider": name,
                "baseUrl": config.base_url.as_str(), "reasoning": reasoning,
                "input": m.input.clone().unwrap_or_else(|| vec![crate::protocol::InputKind::Text]),
                "cost": m.cost.clone().map_or(json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}), |c| serde_json::to_value(c).unwrap_or_default()),
                "contextWindow": m.context_window.unwrap_or(128_000), "maxTokens": max_tokens,
            }))
            .expect("a configured model makes a valid Model");
            let endpoint = Endpoint { base_url: config.base_url.to_string(), api_key: key.clone(), headers: headers.clone(), model: m.id.to_string(), max_tokens, reasoning };
            let provider: Arc<dyn super::Provider> = match api {
                Api::AnthropicMessages => Arc::new(AnthropicProvider { endpoint }),
                _ => Arc::new(OpenAiProvider { endpoint }),
            };
            ModelSpec { info, api, supports_xhigh: m.supports_xhigh.unwrap_or(false), provider }
        })
        .collect()
}
