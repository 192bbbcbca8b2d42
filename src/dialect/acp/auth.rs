//! How agentwire gets provider keys, as ACP authentication methods.
//!
//! | id | type | what it is |
//! |---|---|---|
//! | `provider-keys` | `agent` | keys from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY`, or a provider's `apiKeyEnv`), `models.json` in the config dir, or stored with `agentwire login`; `authenticate` answers whether a provider is usable |
//! | `agentwire-login` | `terminal` | `agentwire login`, run by the client in a terminal: stores a key (file mode 0600); offered only to a client whose `clientCapabilities.auth.terminal` is true |
//!
//! `logout` forgets the stored keys. A prompt the provider refuses for its key (HTTP 401 or
//! 403) fails with -32000, "authentication required".

use crate::jsonrpc::Error;
use crate::protocol::acp::{AuthMethod, AuthMethodAgent, AuthMethodId};
use crate::protocol::PromptError;

/// The agent-type method: the keys agentwire finds itself.
pub const PROVIDER_KEYS: &str = "provider-keys";
/// The terminal-type method: `agentwire login`.
pub const LOGIN: &str = "agentwire-login";

/// What to do when no provider can be used.
const HOW: &str = "set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY, configure a provider in models.json, or run `agentwire login`";

/// The methods to advertise; the terminal one only to a client that can run it.
pub fn methods(terminal: bool) -> Vec<AuthMethod> {
    let mut methods = vec![AuthMethod::AuthMethodAgent(
        AuthMethodAgent::new(AuthMethodId(PROVIDER_KEYS.into()), "Provider API keys")
            .with_description("agentwire reads provider API keys from the environment, from models.json in its config dir, and from keys stored with `agentwire login`".to_owned()),
    )];
    if terminal {
        methods.push(AuthMethod::Object {
            args: vec!["login".into()],
            description: Some("Store a provider's API key (asks for the provider and the key)".into()),
            env: std::collections::HashMap::new(),
            id: AuthMethodId(LOGIN.into()),
            meta: None,
            name: "agentwire login".into(),
            type_: "terminal".into(),
        });
    }
    methods
}

/// -32602 naming `/methodId` for a method agentwire does not offer.
pub fn check_method(id: &str) -> Result<(), Error> {
    if id == PROVIDER_KEYS || id == LOGIN {
        Ok(())
    } else {
        Err(Error::invalid_params(format!("Unknown authentication method {id:?}; the methods are {PROVIDER_KEYS} and {LOGIN}")).at("/methodId", "unknown method"))
    }
}

/// -32000: no provider can be used.
pub fn required() -> Error {
    Error::auth_required(format!("Authentication required: no provider has an API key; {HOW}"))
}

/// The error a failed prompt answers with: -32000 when the provider refused the key.
pub fn prompt_failure(e: &PromptError) -> Error {
    match e.http_status {
        Some(401 | 403) => Error::auth_required(format!("Authentication required: the provider refused the API key ({}); {HOW}", e.message)),
        _ => Error::internal(e.message.clone()),
    }
}
