//! A [`Report`] as JUnit XML, the format CI systems (GitLab, Jenkins, GitHub test reporters)
//! read: one `<testsuite>`, one `<testcase>` per check, a `<failure>` for a failed check (its
//! reason as the message, the evidence as the text) and `<skipped>` for a skipped one.
//!
//! Written by hand, it is small: the only care needed is escaping. Evidence quotes whatever a
//! server sent, so every text is escaped, characters XML 1.0 cannot hold at all (most control
//! characters) become U+FFFD, and line breaks inside attributes are written as character
//! references so a message keeps its lines.

use std::fmt::Write as _;

use crate::report::{Outcome, Report};

/// The suite's name, and every test case's class name.
const SUITE: &str = "listwatch-conformance";

impl Report {
    /// The report as a JUnit XML document.
    pub fn to_junit(&self) -> String {
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            xml,
            "<testsuite name=\"{SUITE}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
            self.results.len(),
            self.failed().count(),
            self.skipped().count(),
            self.elapsed.as_secs_f64()
        );
        for result in &self.results {
            let _ = write!(
                xml,
                "  <testcase classname=\"{SUITE}\" name=\"{}\" time=\"{:.3}\">",
                attribute(&result.name),
                result.elapsed.as_secs_f64()
            );
            match &result.outcome {
                Outcome::Passed => {}
                Outcome::Failed { why, evidence } => {
                    let _ = write!(xml, "\n    <failure message=\"{}\" type=\"failed\">", attribute(why));
                    xml.push_str(&text(&format!("spec {}: {why}", result.section)));
                    if let Some(evidence) = evidence {
                        xml.push('\n');
                        xml.push_str(&text(evidence));
                    }
                    xml.push_str("</failure>\n  ");
                }
                Outcome::Skipped { why } => {
                    let _ = write!(xml, "\n    <skipped message=\"{}\"/>\n  ", attribute(why));
                }
            }
            xml.push_str("</testcase>\n");
        }
        if let Some(problem) = &self.cleanup_problem {
            let _ = writeln!(
                xml,
                "  <system-err>{}</system-err>",
                text(&format!("cleaning up the test namespace failed: {problem}"))
            );
        }
        xml.push_str("</testsuite>\n");
        xml
    }
}

/// Escapes element text.
fn text(value: &str) -> String {
    escape(value, false)
}

/// Escapes an attribute value (to go between double quotes).
fn attribute(value: &str) -> String {
    escape(value, true)
}

fn escape(value: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\'' if in_attribute => out.push_str("&apos;"),
            // Attribute values are normalised (line breaks and tabs read as spaces) unless
            // written as references.
            '\n' if in_attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            '\t' | '\n' => out.push(c),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// XML 1.0's `Char` production: what a document may contain at all, even as a reference.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::CheckResult;

    fn result(name: &str, outcome: Outcome) -> CheckResult {
        CheckResult { name: name.into(), section: "§11.3", outcome, elapsed: Duration::from_millis(1500) }
    }

    #[test]
    fn one_suite_one_case_per_check_with_failures_and_skips() {
        let report = Report {
            results: vec![
                result("a", Outcome::Passed),
                result("b", Outcome::Failed { why: "no event".into(), evidence: Some("GET /x".into()) }),
                result("c", Outcome::Skipped { why: "no bookmarks".into() }),
            ],
            elapsed: Duration::from_secs(2),
            cleanup_problem: None,
        };
        assert_eq!(
            report.to_junit(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuite name=\"listwatch-conformance\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"2.000\">\n\
             \x20 <testcase classname=\"listwatch-conformance\" name=\"a\" time=\"1.500\"></testcase>\n\
             \x20 <testcase classname=\"listwatch-conformance\" name=\"b\" time=\"1.500\">\n\
             \x20   <failure message=\"no event\" type=\"failed\">spec §11.3: no event\nGET /x</failure>\n\
             \x20 </testcase>\n\
             \x20 <testcase classname=\"listwatch-conformance\" name=\"c\" time=\"1.500\">\n\
             \x20   <skipped message=\"no bookmarks\"/>\n\
             \x20 </testcase>\n\
             </testsuite>\n"
        );
    }

    #[test]
    fn server_bytes_are_escaped_and_characters_xml_cannot_hold_replaced() {
        let hostile = "<a href=\"x\">&amp;</a> it's\n\ttab\r\u{0}\u{1b}[31m\u{FFFF}ok 🙂";
        assert_eq!(
            attribute(hostile),
            "&lt;a href=&quot;x&quot;&gt;&amp;amp;&lt;/a&gt; it&apos;s&#10;&#9;tab&#13;\u{FFFD}\u{FFFD}[31m\u{FFFD}ok 🙂"
        );
        assert_eq!(
            text(hostile),
            "&lt;a href=\"x\"&gt;&amp;amp;&lt;/a&gt; it's\n\ttab&#13;\u{FFFD}\u{FFFD}[31m\u{FFFD}ok 🙂"
        );
        let report = Report {
            results: vec![result("x", Outcome::Failed { why: hostile.into(), evidence: Some("]]></failure>".into()) })],
            elapsed: Duration::ZERO,
            cleanup_problem: Some("<gone>".into()),
        };
        let xml = report.to_junit();
        assert!(xml.contains("]]&gt;&lt;/failure&gt;</failure>"), "{xml}");
        assert!(xml.contains("<system-err>cleaning up the test namespace failed: &lt;gone&gt;</system-err>"), "{xml}");
        // Nothing but the markup itself opens an element.
        assert_eq!(xml.matches('<').count(), 9, "{xml}");

        // An XML reader sees the elements, and the message as it was (but for what XML cannot hold).
        let mut reader = quick_xml::Reader::from_str(&xml);
        reader.config_mut().check_end_names = true;
        let (mut elements, mut message) = (Vec::new(), None);
        loop {
            match reader.read_event().expect("well-formed XML") {
                quick_xml::events::Event::Eof => break,
                quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                    if name == "failure" {
                        let attribute = e.try_get_attribute("message").unwrap().expect("a message");
                        message = Some(attribute.unescape_value().unwrap().into_owned());
                    }
                    elements.push(name);
                }
                _ => {}
            }
        }
        assert_eq!(elements, ["testsuite", "testcase", "failure", "system-err"]);
        let readable: String =
            hostile.chars().map(|c| if is_xml_char(c) || "\t\n\r".contains(c) { c } else { '\u{FFFD}' }).collect();
        assert_eq!(message.as_deref(), Some(readable.as_str()));
    }
}
