//! BFCL's AST checker rules, in Rust (as summarised in `data/bfcl/README.md`).
//!
//! Per call: the name matches, every required parameter is present, no parameter is
//! unexpected (undeclared or absent from the answer), each value has the declared type (an
//! int is accepted for a float, a bool is never a number, array elements are checked one level
//! deep), each value is among the allowed ones (strings normalised, lists element by element,
//! dicts key by key), and an answer parameter may be left out only when its allowed list
//! holds `""`. Parallel calls match the answer in any order; irrelevance passes with no call.

use serde_json::{Map, Value};

use super::schema::tool_name;
use super::{BfclCategory, FunctionDef};

/// A call made by the model: a tool name and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The called tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
}

/// Why a task's calls fail the checker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// The number of calls is not the number expected.
    #[error("expected {expected} call(s), got {got}")]
    WrongCount {
        /// Calls expected.
        expected: usize,
        /// Calls made.
        got: usize,
    },
    /// The wrong function was called.
    #[error("expected a call of `{expected}`, got `{got}`")]
    WrongName {
        /// The expected name.
        expected: String,
        /// The called name.
        got: String,
    },
    /// The answer names a function that the task does not declare (a data error).
    #[error("the answer names `{0}`, which is not declared")]
    UnknownFunction(String),
    /// A required parameter is missing.
    #[error("required parameter `{0}` is missing")]
    MissingRequired(String),
    /// A parameter is undeclared or absent from the answer.
    #[error("unexpected parameter `{0}`")]
    Unexpected(String),
    /// A value has the wrong type.
    #[error("parameter `{param}`: expected type {expected}, got {got}")]
    WrongType {
        /// The parameter.
        param: String,
        /// The declared type.
        expected: String,
        /// The value given.
        got: String,
    },
    /// A value is not among the allowed ones.
    #[error("parameter `{param}`: {got} is not an allowed value")]
    WrongValue {
        /// The parameter.
        param: String,
        /// The value given.
        got: String,
    },
    /// An answer parameter that may not be omitted was left out.
    #[error("parameter `{0}` is missing (the answer does not allow omitting it)")]
    MissingOptional(String),
    /// A parallel answer entry matched none of the remaining calls.
    #[error("no call matches expected call {index} (`{name}`): {reason}")]
    NoMatch {
        /// The answer entry, from 0.
        index: usize,
        /// Its function.
        name: String,
        /// Why the last candidate failed.
        reason: String,
    },
}

/// Checks the calls of one task of `category` against its `answer`.
pub fn check(
    category: BfclCategory,
    functions: &[FunctionDef],
    answer: &[Map<String, Value>],
    calls: &[Call],
) -> Result<(), CheckError> {
    match category {
        BfclCategory::Irrelevance => {
            if calls.is_empty() {
                Ok(())
            } else {
                Err(CheckError::WrongCount {
                    expected: 0,
                    got: calls.len(),
                })
            }
        }
        BfclCategory::Simple | BfclCategory::Multiple => {
            if calls.len() != 1 || answer.len() != 1 {
                return Err(CheckError::WrongCount {
                    expected: 1,
                    got: calls.len(),
                });
            }
            check_entry(functions, &answer[0], &calls[0])
        }
        BfclCategory::Parallel => {
            if calls.len() != answer.len() {
                return Err(CheckError::WrongCount {
                    expected: answer.len(),
                    got: calls.len(),
                });
            }
            let mut used = vec![false; calls.len()];
            for (index, entry) in answer.iter().enumerate() {
                let mut last = None;
                let found = calls.iter().enumerate().find(|(i, call)| {
                    if used[*i] {
                        return false;
                    }
                    match check_entry(functions, entry, call) {
                        Ok(()) => true,
                        Err(e) => {
                            last = Some(e);
                            false
                        }
                    }
                });
                match found {
                    Some((i, _)) => used[i] = true,
                    None => {
                        return Err(CheckError::NoMatch {
                            index,
                            name: entry.keys().next().cloned().unwrap_or_default(),
                            reason: last.map(|e| e.to_string()).unwrap_or_default(),
                        });
                    }
                }
            }
            Ok(())
        }
    }
}

/// Checks one call against one answer entry `{name: {param: [allowed values]}}`.
pub fn check_entry(
    functions: &[FunctionDef],
    entry: &Map<String, Value>,
    call: &Call,
) -> Result<(), CheckError> {
    let Some((expected_name, params)) = entry.iter().next() else {
        return Err(CheckError::UnknownFunction(String::new()));
    };
    let expected_name = tool_name(expected_name);
    if tool_name(&call.name) != expected_name {
        return Err(CheckError::WrongName {
            expected: expected_name,
            got: call.name.clone(),
        });
    }
    let function = functions
        .iter()
        .find(|f| tool_name(&f.name) == expected_name)
        .ok_or_else(|| CheckError::UnknownFunction(expected_name.clone()))?;
    let empty = Map::new();
    let params = params.as_object().unwrap_or(&empty);
    let properties = function
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required = function
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for name in required.iter().filter_map(Value::as_str) {
        if !call.arguments.contains_key(name) {
            return Err(CheckError::MissingRequired(name.to_string()));
        }
    }
    for (name, value) in &call.arguments {
        let (Some(declared), Some(allowed)) = (properties.get(name), params.get(name)) else {
            return Err(CheckError::Unexpected(name.clone()));
        };
        check_type(name, declared, value)?;
        if !allowed_values(allowed)
            .iter()
            .any(|a| value_matches(value, a))
        {
            return Err(CheckError::WrongValue {
                param: name.clone(),
                got: value.to_string(),
            });
        }
    }
    for (name, allowed) in params {
        if !call.arguments.contains_key(name) && !may_omit(allowed) {
            return Err(CheckError::MissingOptional(name.clone()));
        }
    }
    Ok(())
}

fn allowed_values(allowed: &Value) -> Vec<&Value> {
    match allowed {
        Value::Array(values) => values.iter().collect(),
        other => vec![other],
    }
}

fn may_omit(allowed: &Value) -> bool {
    allowed_values(allowed)
        .iter()
        .any(|v| v.as_str() == Some(""))
}

fn check_type(param: &str, declared: &Value, value: &Value) -> Result<(), CheckError> {
    let Some(expected) = declared.get("type").and_then(Value::as_str) else {
        return Ok(());
    };
    let wrong = || CheckError::WrongType {
        param: param.to_string(),
        expected: expected.to_string(),
        got: type_name(value).to_string(),
    };
    if !has_type(expected, value) {
        return Err(wrong());
    }
    if matches!(expected, "array" | "tuple")
        && let (Some(item_type), Some(items)) = (
            declared
                .get("items")
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str),
            value.as_array(),
        )
        && !items.iter().all(|item| has_type(item_type, item))
    {
        return Err(CheckError::WrongType {
            param: param.to_string(),
            expected: format!("{expected} of {item_type}"),
            got: value.to_string(),
        });
    }
    Ok(())
}

fn has_type(expected: &str, value: &Value) -> bool {
    match expected {
        "integer" => value.is_i64() || value.is_u64(),
        // An int is accepted where a float is declared.
        "float" | "number" => value.is_number(),
        "string" | "any" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" | "tuple" => value.is_array(),
        "dict" | "object" => value.is_object(),
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "dict",
    }
}

/// BFCL's string normalisation: lower case; spaces and `, . / - _ * ^` removed; `'` → `"`.
pub fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .map(|c| if c == '\'' { '"' } else { c })
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether a given value equals an allowed one under BFCL's rules.
fn value_matches(value: &Value, allowed: &Value) -> bool {
    match (value, allowed) {
        (Value::String(v), Value::String(a)) => normalize(v) == normalize(a),
        (Value::Number(v), Value::Number(a)) => v.as_f64() == a.as_f64(),
        (Value::Array(v), Value::Array(a)) => {
            v.len() == a.len() && v.iter().zip(a).all(|(v, a)| value_matches(v, a))
        }
        (Value::Object(v), Value::Object(a)) => dict_matches(v, a),
        (v, a) => v == a,
    }
}

/// A given dict matches an allowed dict `{key: [allowed values]}` when each given key is
/// allowed with an allowed value, and each allowed key left out may be omitted.
fn dict_matches(given: &Map<String, Value>, allowed: &Map<String, Value>) -> bool {
    given.iter().all(|(key, value)| {
        allowed.get(key).is_some_and(|options| {
            allowed_values(options)
                .iter()
                .any(|a| value_matches(value, a))
        })
    }) && allowed
        .iter()
        .all(|(key, options)| given.contains_key(key) || may_omit(options))
}
