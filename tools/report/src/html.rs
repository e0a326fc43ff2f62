//! `index.html`: the report's Markdown (`markdown.rs`) rendered by `pulldown-cmark`, one
//! `<section id="NAME">` per experiment, plots linked as `<img>` (the SVGs beside it).

use pulldown_cmark::{html, CowStr, Event, Options, Parser};

use crate::header::Header;
use crate::markdown;
use crate::model::{Section, Status};

/// Escapes text for an HTML attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::new();
    html::push_html(&mut out, std::iter::once(Event::Text(CowStr::from(text))));
    out.replace('"', "&quot;")
}

/// Markdown to HTML, with GitHub tables. HTML inside the text is shown as text (the report's
/// strings come from measurements and error messages, not from markup).
fn to_html(markdown: &str) -> String {
    let events = Parser::new_ext(markdown, Options::ENABLE_TABLES).map(|e| match e {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;\
color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;\
padding:3px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}img{max-width:100%;\
border:1px solid #eee}.status{display:inline-block;padding:1px 8px;border-radius:3px;\
font-size:13px}.measured{background:#dff0d8}.failed{background:#f2dede}\
section{border-top:2px solid #ddd;margin-top:2em}";

/// The whole page.
pub fn render(header: &Header, sections: &[Section]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>footprint report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    );
    out.push_str(&to_html(&markdown::head(header, sections)));
    for s in sections {
        let class = match s.status {
            Status::Measured => "measured",
            Status::Failed(_) => "failed",
        };
        out.push_str(&format!(
            "<section id=\"{}\">\n<span class=\"status {class}\">{}</span>\n",
            escape(&s.name),
            escape(&s.status.label())
        ));
        out.push_str(&to_html(&markdown::section(s)));
        out.push_str("</section>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_is_shown_not_run() {
        let html = to_html("a <script>x</script> b and `c<d>`");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(html.contains("<code>c&lt;d&gt;</code>"), "{html}");
    }

    #[test]
    fn tables_bold_and_images_render() {
        let html = to_html("**t**\n\n| a | b |\n| --- | --- |\n| 1 | `x` |\n\n![plot](p.svg)\n");
        assert!(html.contains("<strong>t</strong>"), "{html}");
        assert!(html.contains("<th>a</th>"), "{html}");
        assert!(html.contains("<td><code>x</code></td>"), "{html}");
        assert!(html.contains("<img src=\"p.svg\" alt=\"plot\""), "{html}");
    }

    #[test]
    fn attributes_are_escaped() {
        assert_eq!(escape("a\"<b>&"), "a&quot;&lt;b&gt;&amp;");
    }
}
