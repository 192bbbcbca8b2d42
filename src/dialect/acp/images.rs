//! Whether a prompt's images can go to the session's model. `initialize` advertises
//! `promptCapabilities.image` when any model the client can select takes images, so a prompt
//! may carry one while the current model takes none: it is refused (-32602 naming the model
//! and pointing at the image block), never sent on without it. Both ACP fronts ask here.

use crate::core::AgentCore;
use crate::jsonrpc::Error;
use crate::protocol::{ImageContent, InputKind};

/// `Ok` when `images` (the first of them at `/prompt/{at}`) may be sent to `agent`'s current
/// model; otherwise the -32602 to answer the prompt with. An agent that names no model
/// decides for itself ([`AgentCore::check_input`]).
pub fn check<A: AgentCore>(agent: &A, images: &[ImageContent], at: usize) -> Result<(), Error> {
    if images.is_empty() {
        return Ok(());
    }
    match agent.current_model() {
        Some(model) if model.input.contains(&InputKind::Image) => Ok(()),
        Some(model) => Err(Error::invalid_params(format!(
            "The session's model {}/{} does not take images; select one that does (the `model` config option) or send the prompt without them",
            *model.provider, *model.id
        ))
        .at(format!("/prompt/{at}"), "the model does not take images")),
        None => agent.check_input(images).map_err(|e| Error::invalid_params(e.to_string()).at(format!("/prompt/{at}"), "the agent does not take images")),
    }
}
