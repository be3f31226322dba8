//! JSON written HTML-escaped (`{&#34;state&#34;: …}`): a model imitates a chat template that
//! renders its history through an HTML-escaping filter (llama-cpp-python's
//! `chatml-function-calling`).

/// Whether `text` reads as HTML-escaped JSON: it holds escaped quotes and no plain one.
pub fn is_html_escaped(text: &str) -> bool {
    !text.contains('"') && (text.contains("&#34;") || text.contains("&quot;"))
}

/// `text` with its HTML character references decoded, when it [is HTML-escaped](is_html_escaped):
/// then every quote in it was escaped, so decoding is unambiguous.
pub fn unescape_html(text: &str) -> Option<String> {
    if !is_html_escaped(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match entity(rest) {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// The character a reference at the start of `text` stands for, and the reference's length.
fn entity(text: &str) -> Option<(char, usize)> {
    let end = text.get(..12).unwrap_or(text).find(';')?;
    let name = &text[1..end];
    let c = match name {
        "quot" => '"',
        "apos" => '\'',
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        _ => {
            let code = name.strip_prefix('#')?;
            let number = match code.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => code.parse().ok()?,
            };
            char::from_u32(number)?
        }
    };
    Some((c, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_json_decodes() {
        assert_eq!(
            unescape_html(
                "{&#34;state&#34;: &quot;final&quot;, &#34;a&#34;: &#39;x&amp;y&lt;&#x3e;&#39;}"
            )
            .as_deref(),
            Some("{\"state\": \"final\", \"a\": 'x&y<>'}")
        );
    }

    #[test]
    fn plain_or_mixed_text_is_left_alone() {
        assert_eq!(unescape_html("{\"a\": \"&#34;\"}"), None);
        assert_eq!(unescape_html("Tom &amp; Jerry"), None);
        assert_eq!(
            unescape_html("&#34;&#;&#xZZ;&"),
            Some("\"&#;&#xZZ;&".into())
        );
    }
}
