//! [`ScriptedLlm`], a model that answers from a script and records what it was asked: for tests,
//! examples and the benchmark (no network, no provider); and [`conformance_demo_agent`], the twin of
//! the demo agent of ADK's conformance harness.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use futures::stream::BoxStream;

use crate::error::{Error, Result};
use crate::event::LlmResponse;
use crate::genai::{Content, FunctionCall, MODEL, Part};
use crate::llm_agent::LlmAgent;
use crate::model::Llm;
use crate::tool::FunctionTool;
use crate::types::LlmRequest;

/// One scripted answer: responses to stream in order (the last one final), or an error.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ScriptedAnswer {
    /// Responses to stream in order; the last one is the final answer.
    Responses(Vec<LlmResponse>),
    /// A model error with this message.
    Error(String),
}

impl ScriptedAnswer {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedAnswer::Responses(vec![final_response(Content::model_text(text))])
    }

    /// A final answer calling `name` with `args` (no id: the framework gives one).
    pub fn call(name: impl Into<String>, args: serde_json::Value) -> Self {
        ScriptedAnswer::calls([(name.into(), args)])
    }

    /// A final answer calling several functions at once.
    pub fn calls(calls: impl IntoIterator<Item = (String, serde_json::Value)>) -> Self {
        let parts = calls
            .into_iter()
            .map(|(name, args)| {
                Part::function_call(FunctionCall::new(None, name, args.as_object().cloned().unwrap_or_default()))
            })
            .collect();
        ScriptedAnswer::Responses(vec![final_response(Content::new(MODEL, parts))])
    }

    /// Streamed text: one fragment per chunk, then the aggregate (thought chunks marked `thought`).
    pub fn streamed(chunks: &[&str]) -> Self {
        let mut responses: Vec<LlmResponse> = chunks
            .iter()
            .map(|chunk| LlmResponse { partial: Some(true), ..LlmResponse::new(Content::model_text(*chunk)) })
            .collect();
        let mut last = final_response(Content::model_text(chunks.concat()));
        last.turn_complete = Some(true);
        responses.push(last);
        ScriptedAnswer::Responses(responses)
    }
}

fn final_response(content: Content) -> LlmResponse {
    LlmResponse { partial: Some(false), finish_reason: Some("STOP".into()), ..LlmResponse::new(content) }
}

/// A model that plays [`ScriptedAnswer`]s in order and records every request with the streaming
/// flag it came with. When the script runs out it answers `(script exhausted)`.
#[derive(Debug)]
pub struct ScriptedLlm {
    name: String,
    script: Mutex<VecDeque<ScriptedAnswer>>,
    requests: Mutex<Vec<(LlmRequest, bool)>>,
}

impl ScriptedLlm {
    /// `answers` in order, as model `scripted-model`.
    pub fn new(answers: impl IntoIterator<Item = ScriptedAnswer>) -> Self {
        ScriptedLlm {
            name: "scripted-model".into(),
            script: Mutex::new(answers.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Text answers in order.
    pub fn texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> Self {
        ScriptedLlm::new(texts.into_iter().map(ScriptedAnswer::text))
    }

    /// With another model name.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds an answer at the end of the script.
    pub fn push(&self, answer: ScriptedAnswer) {
        self.script.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push_back(answer);
    }

    /// The requests so far, with their streaming flag.
    pub fn requests(&self) -> Vec<(LlmRequest, bool)> {
        self.requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Llm for ScriptedLlm {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate_content(&self, request: LlmRequest, stream: bool) -> BoxStream<'static, Result<LlmResponse>> {
        self.requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((request, stream));
        let answer = self
            .script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| ScriptedAnswer::text("(script exhausted)"));
        match answer {
            ScriptedAnswer::Responses(responses) => {
                let responses: Vec<LlmResponse> = if stream {
                    responses
                } else {
                    // Without streaming only the final response is given, as the contract wants.
                    responses.into_iter().filter(|r| !r.is_partial()).collect()
                };
                futures::stream::iter(responses.into_iter().map(Ok)).boxed()
            }
            ScriptedAnswer::Error(message) => {
                futures::stream::once(async move { Err(Error::Model(sinew_core::ProviderError::Other(message))) })
                    .boxed()
            }
        }
    }
}

/// The conformance harness's demo agent (`agents/demo_agent/agent.py` of the recorded cases), in
/// Rust: the same name, description, instruction and tools. Its model is `model`; under replay,
/// the recorded one answers instead.
pub fn conformance_demo_agent(model: Arc<dyn Llm>) -> Result<LlmAgent> {
    let weather = FunctionTool::new(
        "get_weather",
        "Returns the weather for a city.",
        serde_json::json!({"properties": {"city": {"title": "City", "type": "string"}}, "required": ["city"],
               "title": "get_weatherParams", "type": "object"}),
        |args, ctx| {
            ctx.set_state("last_city", args["city"].clone());
            ctx.set_state("temp:scratch", serde_json::json!("gone"));
            async move { Ok(serde_json::json!({"city": args["city"], "forecast": "sunny"})) }
        },
    );
    let delete = FunctionTool::new(
        "delete_file",
        "Deletes a file (requires confirmation).",
        serde_json::json!({"properties": {"path": {"title": "Path", "type": "string"}}, "required": ["path"],
               "title": "delete_fileParams", "type": "object"}),
        |args, _| async move { Ok(serde_json::json!({"deleted": args["path"]})) },
    )
    .require_confirmation();
    LlmAgent::builder("demo_agent")
        .model(model)
        .description("demo")
        .instruction("You are a demo agent. Be brief.")
        .tool(Arc::new(weather))
        .tool(Arc::new(delete))
        .build()
}
