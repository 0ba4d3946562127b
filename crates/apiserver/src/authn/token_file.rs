//! `--token-auth-file`: kube-apiserver's static token file.
//!
//! A CSV file, one `token,user,uid[,"group1,group2"]` record per line, read as Go's
//! `encoding/csv` reads it (kube's `tokenfile.NewCSV`), because users bring files written for
//! kube-apiserver and both servers should accept and refuse the same ones: fields are taken
//! verbatim (no trimming), quoted fields may hold commas, `""` and line breaks, a stray quote is
//! an error, empty lines are skipped. A record with fewer than three fields is an error; an
//! empty token is skipped; a repeated token keeps its last record; the fourth field is split on
//! commas into groups (so an empty fourth field is the one group `""`, as in kube).

use std::collections::HashMap;
use std::path::Path;

use super::UserInfo;

/// The users of a token file, by token.
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
    /// The first token in file order (what `serve` puts in the kubeconfig it writes).
    first: Option<String>,
}

impl std::fmt::Debug for TokenFile {
    // Never print the tokens.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile").field("tokens", &self.users.len()).finish()
    }
}

impl TokenFile {
    /// Reads `path`; the error says what kube-apiserver would refuse it for.
    pub fn load(path: &Path) -> Result<TokenFile, String> {
        let text = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&text);
        TokenFile::parse(&text, &path.display().to_string())
    }

    /// Parses a token file (`name` is its path, for error messages).
    pub fn parse(text: &str, name: &str) -> Result<TokenFile, String> {
        let mut users = HashMap::new();
        let mut first = None;
        for (number, record) in read_csv(text).map_err(|e| format!("token file '{name}': {e}"))?.into_iter().enumerate()
        {
            if record.len() < 3 {
                return Err(format!(
                    "token file '{name}' must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                ));
            }
            let mut fields = record.into_iter();
            let token = fields.next().unwrap_or_default();
            if token.is_empty() {
                tracing::warn!("empty token has been found in token file '{name}', record number '{}'", number + 1);
                continue;
            }
            let name_field = fields.next().unwrap_or_default();
            let uid = fields.next().unwrap_or_default();
            let groups = fields.next().map(|g| g.split(',').map(String::from).collect()).unwrap_or_default();
            let user = UserInfo { name: name_field, uid, groups, ..UserInfo::default() };
            first.get_or_insert_with(|| token.clone());
            if users.insert(token, user).is_some() {
                tracing::warn!("duplicate token has been found in token file '{name}', record number '{}'", number + 1);
            }
        }
        Ok(TokenFile { users, first })
    }

    /// The user a token names, if any.
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        self.users.get(token)
    }

    /// The first token of the file.
    pub fn first_token(&self) -> Option<&str> {
        self.first.as_deref()
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// Go `encoding/csv` with its defaults (comma separator, no comments, no lazy quotes, no
/// trimming, any number of fields per record).
fn read_csv(text: &str) -> Result<Vec<Vec<String>>, String> {
    // `\r\n` ends a line like `\n`, inside quoted fields too; a `\r` right before the end of
    // input is dropped.
    let text = text.replace("\r\n", "\n");
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    let error = |start: usize, line: usize, column: usize, what: &str| {
        if start == line {
            format!("parse error on line {line}, column {column}: {what}")
        } else {
            format!("record on line {start}; parse error on line {line}, column {column}: {what}")
        }
    };
    const BARE_QUOTE: &str = "bare \" in non-quoted field";
    const QUOTE: &str = "extraneous or missing \" in quoted field";
    loop {
        while chars.peek() == Some(&'\n') {
            chars.next();
            line += 1;
        }
        if chars.peek().is_none() {
            return Ok(records);
        }
        let start = line;
        let mut column = 1usize;
        let mut record = Vec::new();
        loop {
            let mut field = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                column += 1;
                loop {
                    match chars.next() {
                        None => return Err(error(start, line, column, QUOTE)),
                        Some('"') => {
                            column += 1;
                            match chars.peek() {
                                Some('"') => {
                                    chars.next();
                                    column += 1;
                                    field.push('"');
                                }
                                Some(',' | '\n') | None => break,
                                Some(_) => return Err(error(start, line, column, QUOTE)),
                            }
                        }
                        Some('\n') => {
                            line += 1;
                            column = 1;
                            field.push('\n');
                        }
                        Some(c) => {
                            column += c.len_utf8();
                            field.push(c);
                        }
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    match c {
                        ',' | '\n' => break,
                        '"' => return Err(error(start, line, column, BARE_QUOTE)),
                        _ => {
                            chars.next();
                            column += c.len_utf8();
                            field.push(c);
                        }
                    }
                }
            }
            record.push(field);
            match chars.next() {
                Some(',') => column += 1,
                Some('\n') => {
                    line += 1;
                    break;
                }
                _ => break,
            }
        }
        records.push(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(file: &TokenFile, token: &str) -> Option<(String, String, Vec<String>)> {
        file.user(token).map(|u| (u.name.clone(), u.uid.clone(), u.groups.clone()))
    }

    #[test]
    fn reads_tokens_users_uids_and_groups() {
        let file = TokenFile::parse(
            "abc,alice,1001,\"dev,ops\"\r\n\n def ,bob,1002\nxyz,\"carol, c\",\"10\"\"3\",\n",
            "t.csv",
        )
        .unwrap();
        assert_eq!(user(&file, "abc"), Some(("alice".into(), "1001".into(), vec!["dev".into(), "ops".into()])));
        // Fields are not trimmed.
        assert_eq!(user(&file, "def"), None);
        assert_eq!(user(&file, " def "), Some(("bob".into(), "1002".into(), vec![])));
        // An empty fourth field is one empty group, as strings.Split gives.
        assert_eq!(user(&file, "xyz"), Some(("carol, c".into(), "10\"3".into(), vec!["".into()])));
        assert_eq!(file.len(), 3);
    }

    #[test]
    fn empty_tokens_are_skipped_and_the_last_duplicate_wins() {
        let file = TokenFile::parse(",nobody,0\nt,first,1\nt,second,2", "t.csv").unwrap();
        assert_eq!(file.len(), 1);
        assert_eq!(user(&file, "t").unwrap().0, "second");
        assert_eq!(file.first_token(), Some("t"));
    }

    #[test]
    fn quoted_fields_span_lines() {
        let file = TokenFile::parse("\"a\nb\",u,1\n", "t.csv").unwrap();
        assert_eq!(user(&file, "a\nb").unwrap().0, "u");
    }

    #[test]
    fn refuses_what_kube_refuses() {
        assert_eq!(
            TokenFile::parse("abc,alice\n", "t.csv").unwrap_err(),
            "token file 't.csv' must have at least 3 columns (token, user name, user uid), found 2"
        );
        assert_eq!(
            TokenFile::parse("abc,al\"ice,1\n", "t.csv").unwrap_err(),
            "token file 't.csv': parse error on line 1, column 7: bare \" in non-quoted field"
        );
        let quote = TokenFile::parse("ok,u,1\n\"abc\"x,u,1\n", "t.csv").unwrap_err();
        assert!(quote.starts_with("token file 't.csv': parse error on line 2, column "), "{quote}");
        assert!(quote.ends_with(": extraneous or missing \" in quoted field"), "{quote}");
        assert!(TokenFile::parse("\"abc,u,1\n", "t.csv").unwrap_err().contains("extraneous or missing"));
    }
}
