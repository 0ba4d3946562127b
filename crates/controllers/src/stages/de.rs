//! Reading a stage file's string fields that are small languages of their own (paths,
//! templates) through their parsers, with serde's error position.

/// Reads a string with `parse`, inside the deserializer's visit of the string, where
/// serde_yaml knows the string's line and column.
pub(super) fn parse_str<'de, D, T>(
    deserializer: D,
    expecting: &'static str,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Visit<F>(&'static str, F);
    impl<T, F: FnOnce(&str) -> Result<T, String>> serde::de::Visitor<'_> for Visit<F> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
            (self.1)(text).map_err(E::custom)
        }
    }
    deserializer.deserialize_str(Visit(expecting, parse))
}
