//! Markdown code fences around the JSON.

/// The body of the one ```` ``` ```` or ```` ```json ```` fence in `text`, if there is exactly
/// one and no `{` comes before it (a fence inside a JSON string is content, not markdown).
pub(super) fn unfence(text: &str) -> Option<String> {
    let open = text.find("```")?;
    if text[..open].contains('{') {
        return None;
    }
    let after_open = &text[open + 3..];
    let body_start = after_open.find('\n')?;
    let info = after_open[..body_start].trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return None;
    }
    let body = &after_open[body_start + 1..];
    let close = body.find("```")?;
    if body[close + 3..].contains("```") {
        return None;
    }
    Some(body[..close].trim().to_string())
}
