use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

/// A tool's input schema could not be compiled.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid input schema for tool `{tool}`: {message}")]
pub struct SchemaError {
    /// The tool whose schema is broken.
    pub tool: String,
    /// What the schema compiler said.
    pub message: String,
}

/// A compiled JSON Schema that turns validation errors into short, model-readable lines.
pub struct InputValidator {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for InputValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputValidator")
    }
}

const MAX_REPORTED: usize = 5;

impl InputValidator {
    /// Compiles `schema` for the tool named `tool`.
    pub fn new(tool: &str, schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|e| SchemaError {
                tool: tool.to_string(),
                message: e.to_string(),
            })
    }

    /// Whether `input` satisfies the schema.
    pub fn is_valid(&self, input: &Value) -> bool {
        self.validator.is_valid(input)
    }

    /// Checks `input`; on failure, one line per problem such as
    /// `tool_input.city: required property missing`.
    pub fn validate(&self, input: &Value) -> Result<(), String> {
        let mut lines: Vec<String> = Vec::new();
        let mut total = 0usize;
        for error in self.validator.iter_errors(input) {
            total += 1;
            if lines.len() < MAX_REPORTED {
                let path = dotted_path(error.instance_path().as_str());
                lines.push(describe(&path, error.kind(), &error.to_string()));
            }
        }
        if total == 0 {
            return Ok(());
        }
        if total > lines.len() {
            lines.push(format!("… and {} more", total - lines.len()));
        }
        Err(lines.join("; "))
    }
}

fn dotted_path(pointer: &str) -> String {
    let mut path = String::from("tool_input");
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.chars().all(|c| c.is_ascii_digit()) && !segment.is_empty() {
            path.push_str(&format!("[{segment}]"));
        } else {
            path.push('.');
            path.push_str(&segment);
        }
    }
    path
}

fn describe(path: &str, kind: &ValidationErrorKind, fallback: &str) -> String {
    match kind {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            format!("{path}.{name}: required property missing")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|u| format!("{path}.{u}")).collect();
            format!("{}: unexpected property", names.join(", "))
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => format!("{set:?}"),
            };
            format!("{path}: expected {expected}")
        }
        ValidationErrorKind::Enum { options } => format!("{path}: must be one of {options}"),
        _ => format!("{path}: {fallback}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn weather() -> InputValidator {
        let schema = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": false
        });
        InputValidator::new("weather", &schema).unwrap()
    }

    #[test]
    fn missing_property_names_its_path() {
        let err = weather().validate(&json!({})).unwrap_err();
        assert_eq!(err, "tool_input.city: required property missing");
    }

    #[test]
    fn wrong_type_and_extra_property() {
        let err = weather()
            .validate(&json!({"city": 3, "town": "x"}))
            .unwrap_err();
        assert!(err.contains("tool_input.city: expected string"), "{err}");
        assert!(
            err.contains("tool_input.town: unexpected property"),
            "{err}"
        );
    }

    #[test]
    fn valid_input_passes() {
        assert!(
            weather()
                .validate(&json!({"city": "Delhi", "days": 2}))
                .is_ok()
        );
    }
}
