use std::sync::Arc;

use serde_json::Value;

use super::{InputValidator, InvalidInput, SchemaError, Tool, Typed, TypedTool};
use crate::evidence::provenance::GroundedArgument;
use crate::model::ToolSpec;

/// Registering a tool failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("tool `{0}` is registered twice")]
    Duplicate(String),
    /// A tool's name is reserved by the engine.
    #[error("tool name `{0}` is reserved")]
    Reserved(String),
    /// A tool's input schema does not compile.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

struct Entry {
    tool: Arc<dyn Tool>,
    spec: ToolSpec,
    validator: InputValidator,
}

/// The registered tools, each with its compiled input validator.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    entries: Vec<Arc<Entry>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// The name of the built-in tool that ends a run under the native protocol.
pub const FINAL_ANSWER: &str = "final_answer";

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, compiling its schema once.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let name = tool.name().to_string();
        if name == FINAL_ANSWER {
            return Err(RegistryError::Reserved(name));
        }
        if self.get(&name).is_some() {
            return Err(RegistryError::Duplicate(name));
        }
        let parameters = tool.input_schema();
        let validator = InputValidator::new(&name, &parameters)?;
        let spec = ToolSpec {
            name,
            description: tool.description().to_string(),
            parameters,
            grounded: tool.grounded_arguments(),
            computes: tool.computes(),
        };
        self.entries.push(Arc::new(Entry {
            tool,
            spec,
            validator,
        }));
        Ok(())
    }

    /// Adds a typed tool.
    pub fn register_typed<T: TypedTool>(&mut self, tool: T) -> Result<(), RegistryError> {
        self.register(Arc::new(Typed(tool)))
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entry(name).map(|e| &e.tool)
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.spec.name == name)
            .map(|e| e.as_ref())
    }

    /// Validates `input` against the schema of `name`; `None` when the tool is unknown.
    pub fn validate(&self, name: &str, input: &Value) -> Option<Result<(), InvalidInput>> {
        self.entry(name).map(|e| e.validator.validate(input))
    }

    /// The arguments of `name` that must come from the conversation.
    pub fn grounded(&self, name: &str) -> &[GroundedArgument] {
        self.entry(name).map_or(&[], |e| e.spec.grounded.as_slice())
    }

    /// Whether `name` declares that an identical call can return something new in one run.
    pub fn repeatable(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|e| e.tool.repeatable())
    }

    /// Whether `name` declares that it only reads; an unknown name is not read-only.
    pub fn read_only(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|e| e.tool.read_only())
    }

    /// Whether `name` declares itself idempotent (safe to run again with the same input).
    pub fn idempotent(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|e| e.tool.idempotent())
    }

    /// The names of the registered tools, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.spec.name.as_str()).collect()
    }

    /// The declarations of the registered tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries.iter().map(|e| e.spec.clone()).collect()
    }

    /// A registry holding only the tools `keep` accepts.
    pub fn filtered(&self, keep: impl Fn(&str) -> bool) -> Self {
        Self {
            entries: self
                .entries
                .iter()
                .filter(|e| keep(&e.spec.name))
                .cloned()
                .collect(),
        }
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
