//! Numbers written in text, as an answer or a tool result states them.

/// The numbers written in `text`, in order: an optional sign (`-` or `−` not after a digit),
/// digits with optional thousands commas, and an optional decimal part.
pub fn numbers_in(text: &str) -> Vec<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && chars[i - 1].is_ascii_digit()) {
            i += 1;
            continue;
        }
        let negative = i > 0
            && matches!(chars[i - 1], '-' | '−')
            && !(i > 1 && (chars[i - 2].is_ascii_digit() || chars[i - 2].is_alphabetic()));
        let mut digits = String::new();
        let mut j = i;
        while j < chars.len() {
            let c = chars[j];
            if c.is_ascii_digit() {
                digits.push(c);
            } else if c == ','
                && j + 3 < chars.len() + 1
                && chars[j + 1..]
                    .iter()
                    .take(3)
                    .filter(|d| d.is_ascii_digit())
                    .count()
                    == 3
                && chars.get(j + 4).is_none_or(|d| !d.is_ascii_digit())
            {
                // A thousands separator: exactly three digits follow.
            } else if c == '.'
                && !digits.contains('.')
                && chars.get(j + 1).is_some_and(|d| d.is_ascii_digit())
            {
                digits.push('.');
            } else {
                break;
            }
            j += 1;
        }
        if let Ok(value) = digits.parse::<f64>() {
            out.push(if negative { -value } else { value });
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_with_signs_separators_and_decimals() {
        assert_eq!(numbers_in("391"), vec![391.0]);
        assert_eq!(numbers_in("It is 391.0."), vec![391.0]);
        assert_eq!(
            numbers_in("3.5 and 1,024 and 12,5"),
            vec![3.5, 1024.0, 12.0, 5.0]
        );
        assert_eq!(numbers_in("it is -8.4 °C, 3-5"), vec![-8.4, 3.0, 5.0]);
        assert_eq!(numbers_in("−2"), vec![-2.0]);
        assert_eq!(
            numbers_in("-3 and 1,024 or 17.5."),
            vec![-3.0, 1024.0, 17.5]
        );
        assert_eq!(numbers_in("UTC-5 x-1"), vec![5.0, 1.0]);
    }
}
