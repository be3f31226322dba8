//! The chat template from the GGUF file (`tokenizer.chat_template`), rendered with minijinja
//! the way HuggingFace renders it (trimmed blocks, Python string methods).

use candle_core::quantized::gguf_file;
use corrigible::{Message, Role};
use minijinja::{Environment, ErrorKind, Value, context};

use crate::error::LocalError;

/// ChatML, for files that carry no template of their own.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const TEMPLATE_NAME: &str = "chat";

/// A compiled chat template with the special tokens it may refer to.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

/// The role a message takes in the template: tool results are read as user messages.
fn template_role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User | Role::Tool => "user",
        Role::Assistant => "assistant",
    }
}

impl ChatTemplate {
    /// Compiles `source`; `bos_token`/`eos_token` are the spellings templates may print.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, LocalError> {
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| LocalError::Template(e.to_string()))?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned(TEMPLATE_NAME, source.to_string())
            .map_err(|e| LocalError::Template(e.to_string()))?;
        Ok(Self {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// The template stored in the GGUF file, or ChatML when it has none.
    pub fn from_gguf(
        ct: &gguf_file::Content,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<Self, LocalError> {
        let source = ct
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .map(String::as_str)
            .unwrap_or(CHATML_TEMPLATE);
        Self::new(source, bos_token, eos_token)
    }

    /// Renders `messages` followed by the opening of the assistant's turn.
    pub fn render(&self, messages: &[Message]) -> Result<String, LocalError> {
        self.render_with(messages, true)
    }

    /// Renders `messages` alone, without opening a reply: the text every longer conversation
    /// that starts with them starts with, for templates that render turn by turn.
    pub fn render_turns(&self, messages: &[Message]) -> Result<String, LocalError> {
        self.render_with(messages, false)
    }

    fn render_with(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, LocalError> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                Value::from_pairs([
                    ("role", Value::from(template_role(m.role))),
                    ("content", Value::from(m.content.as_str())),
                ])
            })
            .collect();
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| LocalError::Template(e.to_string()))?;
        template
            .render(context! {
                messages => Value::from(messages),
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos_token.as_str(),
                eos_token => self.eos_token.as_str(),
            })
            .map_err(|e| LocalError::Template(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corrigible::MessageKind;

    #[test]
    fn chatml_renders_each_turn_and_opens_the_reply() {
        let t = ChatTemplate::new(CHATML_TEMPLATE, "", "<|im_end|>").expect("template");
        let text = t
            .render(&[
                Message::system("S"),
                Message::request("Q"),
                Message::assistant(MessageKind::Reply, "A", vec![]),
                Message::tool_result("c1", "calc", "R", false, MessageKind::ToolResult),
            ])
            .expect("render");
        assert_eq!(
            text,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n\
             <|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nR<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn raise_exception_is_a_render_error() {
        let t = ChatTemplate::new("{{ raise_exception('no') }}", "", "").expect("template");
        assert!(matches!(t.render(&[]), Err(LocalError::Template(_))));
    }

    #[test]
    fn python_string_methods_work() {
        let t = ChatTemplate::new(
            "{% for m in messages %}{{ m['content'].strip() }}{% endfor %}",
            "",
            "",
        )
        .expect("template");
        assert_eq!(t.render(&[Message::request("  x ")]).expect("render"), "x");
    }
}
