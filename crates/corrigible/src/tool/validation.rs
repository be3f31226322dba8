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

/// Why a value does not fit a schema: its first problems and how many there were in all.
/// Displayed as model-readable lines under `tool_input` (`tool_input.city: required property
/// missing`); [`InvalidInput::under`] names the value otherwise.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{}", self.under("tool_input"))]
pub struct InvalidInput {
    /// The first problems, at most five.
    pub problems: Vec<Problem>,
    /// How many problems there were in all.
    pub total: usize,
}

/// One way a value fails its schema: where, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where, relative to the value: `""` for the value itself, `.city`, `.items[0]`; several
    /// for one problem of several properties (`unexpected property`).
    pub paths: Vec<String>,
    /// What is wrong: `required property missing`, `expected string`, …
    pub message: String,
}

impl InvalidInput {
    /// The problems as lines under the value named `root` (`final_summary.name: expected
    /// string; … and 2 more`).
    pub fn under(&self, root: &str) -> String {
        let mut lines: Vec<String> = self
            .problems
            .iter()
            .map(|p| {
                let paths: Vec<String> =
                    p.paths.iter().map(|path| format!("{root}{path}")).collect();
                format!("{}: {}", paths.join(", "), p.message)
            })
            .collect();
        if self.total > self.problems.len() {
            lines.push(format!("… and {} more", self.total - self.problems.len()));
        }
        lines.join("; ")
    }
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

    /// Checks `input`; on failure, its problems, each with where and what.
    pub fn validate(&self, input: &Value) -> Result<(), InvalidInput> {
        let mut problems = Vec::new();
        let mut total = 0usize;
        for error in self.validator.iter_errors(input) {
            total += 1;
            if problems.len() < MAX_REPORTED {
                let path = dotted_path(error.instance_path().as_str());
                problems.push(describe(&path, error.kind(), &error.to_string()));
            }
        }
        if total == 0 {
            return Ok(());
        }
        Err(InvalidInput { problems, total })
    }
}

fn dotted_path(pointer: &str) -> String {
    let mut path = String::new();
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

fn describe(path: &str, kind: &ValidationErrorKind, fallback: &str) -> Problem {
    let at = |message: String| Problem {
        paths: vec![path.to_string()],
        message,
    };
    match kind {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            Problem {
                paths: vec![format!("{path}.{name}")],
                message: "required property missing".into(),
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => Problem {
            paths: unexpected.iter().map(|u| format!("{path}.{u}")).collect(),
            message: "unexpected property".into(),
        },
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => format!("{set:?}"),
            };
            at(format!("expected {expected}"))
        }
        ValidationErrorKind::Enum { options } => at(format!("must be one of {options}")),
        _ => at(fallback.to_string()),
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
        assert_eq!(
            err.to_string(),
            "tool_input.city: required property missing"
        );
        assert_eq!(err.problems[0].paths, [".city"]);
        assert_eq!(
            err.under("arguments"),
            "arguments.city: required property missing"
        );
    }

    #[test]
    fn wrong_type_and_extra_property() {
        let err = weather()
            .validate(&json!({"city": 3, "town": "x"}))
            .unwrap_err()
            .to_string();
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
