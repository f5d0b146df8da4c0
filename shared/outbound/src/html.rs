//! Readable text from HTML: scripts, styles and markup dropped, block elements as line breaks,
//! the common entities decoded. Enough for a planner to read a page; not a browser.

const SKIPPED: [&str; 6] = ["script", "style", "noscript", "template", "svg", "head"];
const BLOCKS: [&str; 22] = [
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "pre",
    "blockquote",
    "title",
    "hr",
];

/// The page's `<title>`, if any.
pub fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let t = collapse(&decode_entities(&html[open_end..close]));
    (!t.is_empty()).then_some(t)
}

/// The visible text of `html`.
pub fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut skipping: Option<String> = None;
    loop {
        // Inside script/style, only the matching close tag ends it, whatever `<` it contains.
        if let Some(open) = skipping.take() {
            let close = format!("</{open}");
            rest = match rest.to_ascii_lowercase().find(&close) {
                Some(at) => rest[at..].find('>').map_or("", |gt| &rest[at + gt + 1..]),
                None => "",
            };
            continue;
        }
        let Some(lt) = rest.find('<') else { break };
        out.push_str(&decode_entities(&rest[..lt]));
        let after = &rest[lt + 1..];
        if after.starts_with("!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(gt) = after.find('>') else {
            rest = "";
            break;
        };
        let tag = &after[..gt];
        rest = &after[gt + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
            skipping = Some(name);
        } else if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else {
            out.push(' ');
        }
    }
    out.push_str(&decode_entities(rest));
    out.lines()
        .map(collapse)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let end = after.find(';').filter(|&e| e <= 10);
        let decoded = end.and_then(|e| entity(&after[..e]));
        match (end, decoded) {
            (Some(e), Some(c)) => {
                out.push(c);
                rest = &after[e + 1..];
            }
            _ => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_scripts_and_comments_are_dropped_and_blocks_become_lines() {
        let html = "<html><head><title>Tea &amp; you</title><style>p{}</style></head>\
                    <body><h1>Green tea</h1><script>alert('x<y')</script><!-- hidden -->\
                    <p>Steep at 80&deg;C for <b>2&nbsp;min</b>.</p><ul><li>sencha</li><li>matcha &#x2014; whisked</li></ul></body></html>";
        assert_eq!(title(html).as_deref(), Some("Tea & you"));
        assert_eq!(
            to_text(html),
            "Green tea\nSteep at 80&deg;C for 2 min .\nsencha\nmatcha — whisked"
        );
    }

    #[test]
    fn a_truncated_page_still_yields_its_text() {
        assert_eq!(to_text("<p>first</p><p>sec"), "first\nsec");
        assert_eq!(to_text("<p>cut <a href=\"x"), "cut");
    }
}
