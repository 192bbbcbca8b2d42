//! Which models exist: the offline model (always), built-in entries for the common providers
//! whose API key variable is set, and the models file in the config dir.
//!
//! Config dir: `--config-dir`, else `$AGENTWIRE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/agentwire`,
//! else `~/.config/agentwire`. The models file is `models.json` there
//! (`schema/models-file.schema.json`); a provider in the file replaces a built-in of the same name.
//! A provider's key is its literal `apiKey`, else its `apiKeyEnv` variable, else the key stored
//! for it with `agentwire login` ([`super::keys`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::anthropic::AnthropicProvider;
use super::gemini::GeminiProvider;
use super::offline::{OfflineModel, OfflineProvider};
use super::openai::OpenAiProvider;
use super::openai_responses::OpenAiResponsesProvider;
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
/// entry of the same provider name replaces them). JSON text parsed straight into the typed
/// configs: building it with `json!` and converting the `Value` cost 176k instructions of every
/// start (docs/performance.md, "Start-up").
const BUILTINS: &str = r#"[
        ["openai", {"api": "openai-responses", "baseUrl": "https://api.openai.com/v1", "apiKeyEnv": "OPENAI_API_KEY", "models": [
            {"id": "gpt-5", "name": "GPT-5", "contextWindow": 400000, "maxTokens": 128000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 1.25, "output": 10.0, "cacheRead": 0.125, "cacheWrite": 0}},
            {"id": "gpt-5-mini", "name": "GPT-5 mini", "contextWindow": 400000, "maxTokens": 128000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 0.25, "output": 2.0, "cacheRead": 0.025, "cacheWrite": 0}},
            {"id": "gpt-4.1", "name": "GPT-4.1", "contextWindow": 1047576, "maxTokens": 32768, "input": ["text", "image"], "cost": {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0}},
            {"id": "gpt-4.1-mini", "name": "GPT-4.1 mini", "contextWindow": 1047576, "maxTokens": 32768, "input": ["text", "image"], "cost": {"input": 0.4, "output": 1.6, "cacheRead": 0.1, "cacheWrite": 0}},
            {"id": "o4-mini", "name": "o4-mini", "contextWindow": 200000, "maxTokens": 100000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 1.1, "output": 4.4, "cacheRead": 0.275, "cacheWrite": 0}}
        ]}],
        ["anthropic", {"api": "anthropic-messages", "baseUrl": "https://api.anthropic.com", "apiKeyEnv": "ANTHROPIC_API_KEY", "models": [
            {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "contextWindow": 200000, "maxTokens": 64000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}},
            {"id": "claude-haiku-4-5", "name": "Claude Haiku 4.5", "contextWindow": 200000, "maxTokens": 64000, "reasoning": true, "input": ["text", "image"], "cost": {"input": 1.0, "output": 5.0, "cacheRead": 0.1, "cacheWrite": 1.25}}
        ]}],
        ["google", {"api": "google-generative-ai", "baseUrl": "https://generativelanguage.googleapis.com", "apiKeyEnv": "GEMINI_API_KEY", "models": [
            {"id": "gemini-2.5-pro", "name": "Gemini 2.5 Pro", "contextWindow": 1048576, "maxTokens": 65536, "reasoning": true, "input": ["text", "image"], "cost": {"input": 1.25, "output": 10.0, "cacheRead": 0.31, "cacheWrite": 0}},
            {"id": "gemini-2.5-flash", "name": "Gemini 2.5 Flash", "contextWindow": 1048576, "maxTokens": 65536, "reasoning": true, "input": ["text", "image"], "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0.075, "cacheWrite": 0}}
        ]}],
        ["openrouter", {"api": "openai-completions", "baseUrl": "https://openrouter.ai/api/v1", "apiKeyEnv": "OPENROUTER_API_KEY", "models": [
            {"id": "openai/gpt-4.1-mini", "name": "GPT-4.1 mini (OpenRouter)", "contextWindow": 1047576, "maxTokens": 32768, "input": ["text", "image"], "cost": {"input": 0.4, "output": 1.6, "cacheRead": 0.1, "cacheWrite": 0}},
            {"id": "anthropic/claude-sonnet-4.5", "name": "Claude Sonnet 4.5 (OpenRouter)", "contextWindow": 200000, "maxTokens": 64000, "input": ["text", "image"], "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}}
        ]}]
    ]"#;

/// Key variables read when the one a provider names is unset, as the provider's own SDKs do
/// (Google's read `GOOGLE_API_KEY` as well as `GEMINI_API_KEY`).
const ALTERNATE_KEY_VARS: &[(&str, &str)] = &[("GEMINI_API_KEY", "GOOGLE_API_KEY")];

/// The key in the environment for a provider naming `var`: `var`, else its alternate.
fn key_from_env(var: &str) -> Option<String> {
    let alternate = ALTERNATE_KEY_VARS.iter().find(|(v, _)| *v == var).map(|(_, a)| *a);
    std::iter::once(var).chain(alternate).find_map(|v| std::env::var(v).ok().filter(|k| !blank(k)))
}

/// `$VAR` for an error message, with its alternate when it has one.
fn key_vars(var: &str) -> String {
    match ALTERNATE_KEY_VARS.iter().find(|(v, _)| *v == var) {
        Some((_, alternate)) => format!("${var} or ${alternate}"),
        None => format!("${var}"),
    }
}

fn builtins() -> Vec<(String, ProviderConfig)> {
    serde_json::from_str(BUILTINS).expect("built-in provider entries match the schema")
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

/// Why the catalogue could not be built. Each message names the file (and the JSON pointer of
/// the key) or the flag that is wrong, and never echoes a key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The models file exists but cannot be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// The models file is not JSON.
    #[error("{}: {source}", path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
    /// The models file does not match `schema/models-file.schema.json` (an unknown `api`, a
    /// missing field, …); `reason` is the validator's `<def>: <pointer>: <what>`.
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
    /// A provider's literal `apiKey` is empty: a key was meant and is missing. (A provider
    /// without keys leaves `apiKey` out.)
    #[error("{}: {pointer}: the API key is empty (leave apiKey out for a server that needs no key, or use apiKeyEnv)", path.display())]
    EmptyApiKey { path: PathBuf, pointer: String },
    /// `--api-key` was given an empty value.
    #[error("--api-key is empty (leave the flag out to use the configured key)")]
    EmptyApiKeyFlag,
    /// `--provider`/`--model` (or `defaultModel`) names no usable model. `hint` (empty or ending
    /// in "; ") says why a known provider is not usable.
    #[error("Model not found: {provider}/{model} ({hint}configured: {configured})")]
    ModelNotFound { provider: String, model: String, hint: String, configured: String },
    /// `--provider` alone names a provider with no usable model.
    #[error("Provider not found: {provider} ({hint}configured: {configured})")]
    ProviderNotFound { provider: String, hint: String, configured: String },
}

/// `~` and `/` escaped as in a JSON pointer segment (RFC 6901).
fn pointer_segment(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// A key that is empty or only whitespace is no key.
fn blank(key: &str) -> bool {
    key.trim().is_empty()
}

/// Builds the catalogue; errors say which file or flag is wrong.
pub fn load(selection: &Selection) -> Result<Catalogue, ConfigError> {
    // An explicit empty key is a mistake, not "no key": the caller asked for a key and got none.
    if selection.api_key.as_deref().is_some_and(blank) {
        return Err(ConfigError::EmptyApiKeyFlag);
    }
    let offline = selection.offline.clone().unwrap_or_default();
    let mut models = vec![ModelSpec {
        info: offline_model_info(),
        api: Api::Offline,
        supports_xhigh: false,
        provider: Arc::new(OfflineProvider::new(offline)),
    }];
    let mut providers: Vec<(String, ProviderConfig)> = builtins();
    let mut default_model = None;
    let dir = config_dir(selection.config_dir.as_deref());
    let stored = dir.as_deref().map(super::keys::stored).unwrap_or_default();
    if let Some(dir) = dir {
        let path = dir.join("models.json");
        if path.exists() {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
            let value: Value = serde_json::from_str(&text).map_err(|source| ConfigError::Parse { path: path.clone(), source })?;
            validator().validate_def("ModelsFile", &value).map_err(|e| ConfigError::Invalid { path: path.clone(), reason: e.to_string() })?;
            // Providers keep the file's order (the typed map does not).
            let order: Vec<String> = value["providers"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
            let mut file: ModelsFile = crate::protocol::decode::from_value(value).map_err(|source| ConfigError::Parse { path: path.clone(), source })?;
            default_model = file.default_model;
            for name in order {
                if let Some(config) = file.providers.remove(&name) {
                    if config.api_key.as_deref().is_some_and(blank) {
                        return Err(ConfigError::EmptyApiKey { path, pointer: format!("/providers/{}/apiKey", pointer_segment(&name)) });
                    }
                    providers.retain(|(n, _)| *n != name);
                    providers.push((name, config));
                }
            }
        }
    }
    // Providers left out because their key variable is unset or empty, with that variable.
    let mut unconfigured: Vec<(String, String)> = Vec::new();
    for (name, config) in providers {
        let explicit = selection.provider.as_deref() == Some(name.as_str());
        let key = match (&selection.api_key, explicit) {
            (Some(k), true) => Some(k.clone()),
            // An empty variable is the usual way to unset a key in a shell or CI config, so it
            // means "not configured" rather than an error.
            // A key stored with `agentwire login` comes last.
            _ => config
                .api_key
                .clone()
                .or_else(|| config.api_key_env.as_ref().and_then(|v| key_from_env(v.as_str())))
                .or_else(|| stored.get(&name).cloned())
                .filter(|k| !blank(k)),
        };
        // Providers reached with a key variable are usable only when it is set; a literal key,
        // or none at all (local servers such as Ollama), is always usable.
        if key.is_none() && config.api_key.is_none() {
            if let Some(var) = &config.api_key_env {
                unconfigured.push((name, var.to_string()));
                continue;
            }
        }
        models.extend(specs(&name, &config, key));
    }
    let wanted = match (&selection.provider, &selection.model) {
        (Some(p), Some(m)) => Some((p.clone(), m.clone())),
        // An explicit provider that is not usable (for instance its key variable is empty) is an
        // error, not a silent start on the offline model.
        (Some(p), None) => match models.iter().find(|s| *s.info.provider == *p) {
            Some(s) => Some((p.clone(), s.info.id.to_string())),
            None => return Err(ConfigError::ProviderNotFound { provider: p.clone(), hint: unconfigured_hint(&unconfigured, p), configured: configured(&models) }),
        },
        (None, Some(m)) => models.iter().find(|s| *s.info.id == *m).map(|s| (s.info.provider.to_string(), m.clone())),
        (None, None) => default_model.as_deref().and_then(|d| d.split_once('/')).map(|(p, m)| (p.to_owned(), m.to_owned())),
    };
    let current = match wanted {
        None => 0,
        Some((provider, model)) => match models.iter().position(|s| *s.info.provider == provider && *s.info.id == model) {
            Some(i) => i,
            None => {
                let hint = unconfigured_hint(&unconfigured, &provider);
                return Err(ConfigError::ModelNotFound { provider, model, hint, configured: configured(&models) });
            }
        },
    };
    Ok(Catalogue { models, current })
}

/// Why `provider` has no models when it was left out for want of its key variable, else "".
fn unconfigured_hint(unconfigured: &[(String, String)], provider: &str) -> String {
    match unconfigured.iter().find(|(n, _)| n == provider) {
        Some((_, var)) => format!("provider {provider} needs {}, which is unset or empty; ", key_vars(var)),
        None => String::new(),
    }
}

/// The usable models as `provider/id`, for error messages.
fn configured(models: &[ModelSpec]) -> String {
    models.iter().map(|s| format!("{}/{}", *s.info.provider, *s.info.id)).collect::<Vec<_>>().join(", ")
}

/// Builds a provider for one endpoint.
type MakeProvider = fn(Endpoint) -> Arc<dyn super::Provider>;

fn specs(name: &str, config: &ProviderConfig, key: Option<String>) -> Vec<ModelSpec> {
    let headers: Vec<(String, String)> = config.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    config
        .models
        .iter()
        .map(|m| {
            // Exhaustive on purpose: an API added to the schema must get its own provider here
            // instead of silently speaking another wire format.
            let (api, make): (Api, MakeProvider) = match config.api {
                ProviderConfigApi::OpenaiCompletions => (Api::OpenAiCompletions, |endpoint| Arc::new(OpenAiProvider { endpoint })),
                ProviderConfigApi::AnthropicMessages => (Api::AnthropicMessages, |endpoint| Arc::new(AnthropicProvider { endpoint })),
                ProviderConfigApi::OpenaiResponses => (Api::OpenAiResponses, |endpoint| Arc::new(OpenAiResponsesProvider { endpoint })),
                ProviderConfigApi::GoogleGenerativeAi => (Api::GoogleGenerativeAi, |endpoint| Arc::new(GeminiProvider { endpoint })),
            };
            let reasoning = m.reasoning.unwrap_or(false);
            let max_tokens = m.max_tokens.unwrap_or(8192);
            let info: Model = crate::protocol::decode::from_value(json!({
                "id": m.id.as_str(), "name": m.name.clone().unwrap_or_else(|| m.id.to_string()), "api": api.name(), "provider": name,
                "baseUrl": config.base_url.as_str(), "reasoning": reasoning,
                "input": m.input.clone().unwrap_or_else(|| vec![crate::protocol::InputKind::Text]),
                "cost": m.cost.clone().map_or(json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}), |c| serde_json::to_value(c).unwrap_or_default()),
                "contextWindow": m.context_window.unwrap_or(128_000), "maxTokens": max_tokens,
            }))
            .expect("a configured model makes a valid Model");
            let endpoint = Endpoint { base_url: config.base_url.to_string(), api_key: key.clone(), headers: headers.clone(), model: m.id.to_string(), max_tokens, reasoning };
            ModelSpec { info, api, supports_xhigh: m.supports_xhigh.unwrap_or(false), provider: make(endpoint) }
        })
        .collect()
}
