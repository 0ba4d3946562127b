//! JSON field paths for error messages and unknown-field reports, in the form kube-apiserver's
//! strict decoder (sigs.k8s.io/json) prints them: `spec.template.spec.containers[0].image`.
//!
//! A path is a chain of stack frames, each pointing at its parent, so descending into a field
//! costs nothing; the text is only built when something has to be reported.

#[derive(Clone, Copy)]
enum Segment<'a> {
    Root,
    Field(&'a str),
    Index(usize),
    Key(&'a str),
}

#[derive(Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
}

impl<'a> Path<'a> {
    pub(crate) const ROOT: Path<'static> = Path { parent: None, segment: Segment::Root };

    pub(crate) fn field(&'a self, name: &'a str) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Field(name) }
    }

    pub(crate) fn index(&'a self, index: usize) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Index(index) }
    }

    pub(crate) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path { parent: Some(self), segment: Segment::Key(key) }
    }

    pub(crate) fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut frame = Some(self);
        while let Some(current) = frame {
            segments.push(current.segment);
            frame = current.parent;
        }
        let mut text = String::new();
        for segment in segments.iter().rev() {
            match segment {
                Segment::Root => {}
                Segment::Field(name) => {
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(name);
                }
                Segment::Index(index) => text.push_str(&format!("[{index}]")),
                Segment::Key(key) => text.push_str(&format!("[{key}]")),
            }
        }
        text
    }

    /// How many fields, indexes and keys lead here from the root (at least the JSON nesting
    /// of the value at this path, less its own).
    pub(crate) fn depth(&self) -> usize {
        let mut depth = 0;
        let mut frame = self;
        while let Some(parent) = frame.parent {
            depth += 1;
            frame = parent;
        }
        depth
    }

    /// The path for reporting something about the object itself: `<root>` at the top.
    pub(crate) fn describe(&self) -> String {
        let text = self.render();
        if text.is_empty() { "<root>".to_owned() } else { text }
    }
}

#[cfg(test)]
mod tests {
    use super::Path;

    #[test]
    fn renders_like_the_strict_decoder() {
        let root = Path::ROOT;
        let spec = root.field("spec");
        let containers = spec.field("containers");
        let first = containers.index(0);
        let unknown = first.field("imagee");
        assert_eq!(unknown.render(), "spec.containers[0].imagee");
        let limits = first.field("resources").field("limits").render();
        assert_eq!(limits, "spec.containers[0].resources.limits");
        assert_eq!(root.describe(), "<root>");
        assert_eq!(root.field("data").key("a.txt").render(), "data[a.txt]");
    }
}
