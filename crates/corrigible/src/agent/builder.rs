use crate::rule::{BUILTIN, Rule};
use std::sync::Arc;

use schemars::JsonSchema;

use super::{Agent, OutputValidator};
use crate::context::ContextBudget;
use crate::correction::feedback::{FeedbackTemplate, TemplateError};
use crate::discovery::Discovery;
use crate::examples::{WorkedExample, example_messages};
use crate::message::Message;
use crate::model::{Model, Protocol};
use crate::policy::{BreakerStore, CircuitBreakers, Policy, ToolPolicy};
use crate::probe::ProtocolReason;
use crate::prompt::SystemPrompt;
use crate::tool::{InputValidator, RegistryError, SchemaError, Tool, ToolRegistry, TypedTool};
use crate::verify::Verifier;

/// Building an agent failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BuildError {
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A template does not compile.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The typed output's schema does not compile.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A per-tool policy names a tool that is not registered.
    #[error("tool policy for `{0}`: no such tool is registered")]
    UnknownToolPolicy(String),
    /// `without_rule` names no built-in rule.
    #[error("unknown rule `{0}`: not one of the built-in rules ({1})")]
    UnknownRule(String, String),
    /// Two rules share a name.
    #[error("two rules are named `{0}`: a rule's name must be unique")]
    DuplicateRule(String),
}

/// Builds an [`Agent`]: `Agent::builder(model).typed_tool(t).policy(p).build()`.
pub struct AgentBuilder {
    model: Arc<dyn Model>,
    tools: ToolRegistry,
    policy: Policy,
    protocol: Protocol,
    protocol_reason: Option<ProtocolReason>,
    system: Option<String>,
    feedback: Option<String>,
    breakers: Option<Arc<CircuitBreakers>>,
    breaker_store: Option<Arc<dyn BreakerStore>>,
    context: ContextBudget,
    validators: Vec<Arc<dyn OutputValidator>>,
    output: Option<serde_json::Value>,
    examples: Vec<Message>,
    worked: Vec<WorkedExample>,
    errors: Vec<BuildError>,
    discovery: Discovery,
    verifier: Option<Verifier>,
    rules: Vec<Arc<dyn Rule>>,
    without_rules: Vec<String>,
    capture_content: bool,
}

impl AgentBuilder {
    pub(crate) fn new(model: Arc<dyn Model>) -> Self {
        Self {
            model,
            tools: ToolRegistry::new(),
            policy: Policy::default(),
            protocol: Protocol::Json,
            protocol_reason: None,
            system: None,
            feedback: None,
            breakers: None,
            breaker_store: None,
            context: ContextBudget::default(),
            validators: Vec::new(),
            output: None,
            examples: Vec::new(),
            worked: Vec::new(),
            errors: Vec::new(),
            discovery: Discovery::default(),
            verifier: None,
            rules: Vec::new(),
            without_rules: Vec::new(),
            capture_content: false,
        }
    }

    /// Registers a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        if let Err(e) = self.tools.register(Arc::new(tool)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Registers a typed tool.
    pub fn typed_tool(mut self, tool: impl TypedTool) -> Self {
        if let Err(e) = self.tools.register_typed(tool) {
            self.errors.push(e.into());
        }
        self
    }

    /// Uses an already built registry (replacing any tools added so far).
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// When the model sees the short catalog (names, one line each, and `describe_tool`)
    /// instead of every tool's schema.
    pub fn discovery(mut self, discovery: Discovery) -> Self {
        self.discovery = discovery;
        self
    }

    /// Sets every bound at once.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Overrides the policy of one tool.
    pub fn tool_policy(mut self, tool: &str, policy: ToolPolicy) -> Self {
        self.policy.tools.insert(tool.to_string(), policy);
        self
    }

    /// Chooses the decision protocol.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Says why the protocol was chosen (for example by [`crate::probe::probe_tool_calling`]);
    /// every run's trace records it when it starts.
    pub fn protocol_reason(mut self, reason: ProtocolReason) -> Self {
        self.protocol_reason = Some(reason);
        self
    }

    /// Replaces the system prompt template (see `prompt::DEFAULT_SYSTEM_TEMPLATE`).
    pub fn system_template(mut self, source: impl Into<String>) -> Self {
        self.system = Some(source.into());
        self
    }

    /// Replaces the feedback template (see `feedback::DEFAULT_FEEDBACK_TEMPLATE`).
    pub fn feedback_template(mut self, source: impl Into<String>) -> Self {
        self.feedback = Some(source.into());
        self
    }

    /// Shares circuit breakers with other agents (by default each agent has its own).
    pub fn breakers(mut self, breakers: Arc<CircuitBreakers>) -> Self {
        self.breakers = Some(breakers);
        self
    }

    /// Keeps the agent's circuit breakers in `store`, shared with every process that uses
    /// it (ignored when [`breakers`](Self::breakers) gives breakers of its own).
    pub fn breaker_store(mut self, store: Arc<dyn BreakerStore>) -> Self {
        self.breaker_store = Some(store);
        self
    }

    /// Sets the context budget.
    pub fn context_budget(mut self, budget: ContextBudget) -> Self {
        self.context = budget;
        self
    }

    /// Sets raw example turns shown before the request (after any worked examples).
    pub fn examples(mut self, examples: Vec<Message>) -> Self {
        self.examples = examples;
        self
    }

    /// Sets worked examples, rendered as chat turns in the agent's protocol before the request.
    /// An example that calls a tool the agent does not have is left out.
    pub fn worked_examples(mut self, examples: Vec<WorkedExample>) -> Self {
        self.worked = examples;
        self
    }

    /// Adds an output validator.
    pub fn validator(mut self, validator: impl OutputValidator + 'static) -> Self {
        self.validators.push(Arc::new(validator));
        self
    }

    /// Declares a typed final output: the final summary must be JSON matching `T`'s schema.
    pub fn output<T: JsonSchema>(mut self) -> Self {
        let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
        if let Some(obj) = schema.as_object_mut() {
            obj.remove("$schema");
        }
        self.output = Some(schema);
        self
    }

    /// Adds a rule of your own, judged after the built-in rules on every action and final
    /// answer; its rejections go back to the model like theirs and are recorded under its name.
    pub fn rule(mut self, rule: impl Rule + 'static) -> Self {
        self.rules.push(Arc::new(rule));
        self
    }

    /// Adds a rule of your own that is shared with other agents.
    pub fn shared_rule(mut self, rule: Arc<dyn Rule>) -> Self {
        self.rules.push(rule);
        self
    }

    /// Leaves out the built-in rule named `name` (`declined_request`, `echo`, …), whatever the
    /// profile or a run's policy turns on.
    pub fn without_rule(mut self, name: impl Into<String>) -> Self {
        self.without_rules.push(name.into());
        self
    }

    /// Has every satisfied answer checked by `verifier` before it is accepted (off unless set).
    pub fn verifier(mut self, verifier: Verifier) -> Self {
        self.verifier = Some(verifier);
        self
    }

    /// Records the messages each model call saw and answered, and each tool call's arguments
    /// and result, on the run's spans (the GenAI conventions' opt-in attributes). Off unless
    /// set: they can hold anything a user or a tool wrote.
    pub fn capture_content(mut self, on: bool) -> Self {
        self.capture_content = on;
        self
    }

    /// Validates everything and builds the agent.
    pub fn build(mut self) -> Result<Agent, BuildError> {
        if let Some(error) = self.errors.drain(..).next() {
            return Err(error);
        }
        if let Some(name) = self
            .policy
            .tools
            .keys()
            .find(|n| self.tools.get(n).is_none())
        {
            return Err(BuildError::UnknownToolPolicy(name.clone()));
        }
        let builtin: Vec<&str> = BUILTIN.iter().map(|r| r.name()).collect();
        if let Some(name) = self
            .without_rules
            .iter()
            .find(|n| !builtin.contains(&n.as_str()))
        {
            return Err(BuildError::UnknownRule(name.clone(), builtin.join(", ")));
        }
        let mut names = builtin.clone();
        for rule in &self.rules {
            if names.contains(&rule.name()) {
                return Err(BuildError::DuplicateRule(rule.name().to_string()));
            }
            names.push(rule.name());
        }
        let system = match self.system {
            Some(source) => SystemPrompt::new(source)?,
            None => SystemPrompt::default(),
        };
        let feedback = match self.feedback {
            Some(source) => FeedbackTemplate::new(source)?,
            None => FeedbackTemplate::default(),
        };
        let output = match self.output {
            Some(schema) => {
                let validator = InputValidator::new("output", &schema)?;
                Some((schema, validator))
            }
            None => None,
        };
        let breakers = self.breakers.unwrap_or_else(|| {
            Arc::new(match self.breaker_store {
                Some(store) => CircuitBreakers::shared(self.policy.breaker, store),
                None => CircuitBreakers::new(self.policy.breaker),
            })
        });
        let usable: Vec<WorkedExample> = self
            .worked
            .into_iter()
            .filter(|e| e.tools().all(|t| self.tools.get(t).is_some()))
            .collect();
        let mut examples = example_messages(&usable, self.protocol);
        examples.extend(self.examples);
        Ok(Agent {
            model: self.model,
            tools: self.tools,
            policy: self.policy,
            protocol: self.protocol,
            protocol_reason: self.protocol_reason,
            system,
            feedback,
            breakers,
            context: self.context,
            validators: self.validators,
            output,
            examples,
            worked: usable,
            discovery: self.discovery,
            verifier: self.verifier,
            rules: self.rules,
            without_rules: self.without_rules,
            capture_content: self.capture_content,
        })
    }
}
