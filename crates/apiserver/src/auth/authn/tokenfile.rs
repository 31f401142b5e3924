//! `--token-auth-file`: static bearer tokens read from a CSV file (upstream
//! `k8s.io/apiserver/pkg/authentication/token/tokenfile`): one line per token,
//! `token,user,uid[,"group1,group2,..."]`; lines starting with `#` are comments.

use std::collections::HashMap;
use std::path::Path;

use crate::machinery::user::UserInfo;

/// The tokens of a token file.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

/// Splits one CSV record as Go's `encoding/csv` reads it: fields separated by commas,
/// double-quoted fields may hold commas and `""` for a quote.
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    cur.push('"');
                }
                '"' => {
                    quoted = false;
                    if !matches!(chars.peek(), None | Some(',')) {
                        return Err("extraneous or missing \" in quoted-field".into());
                    }
                }
                c => cur.push(c),
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            '"' => return Err("bare \" in non-quoted-field".into()),
            ',' => {
                fields.push(std::mem::take(&mut cur));
                at_start = true;
            }
            c => {
                cur.push(c);
                at_start = false;
            }
        }
    }
    if quoted {
        return Err("extraneous or missing \" in quoted-field".into());
    }
    fields.push(cur);
    Ok(fields)
}

impl TokenFile {
    /// Reads the file at `path`.
    pub fn read(path: &Path) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        TokenFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the file's contents (upstream `NewCSV`): records with fewer than 3
    /// fields are an error; an empty token is skipped with a warning; a repeated
    /// token keeps its last line.
    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let mut tokens = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let record = csv_fields(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            if record.len() < 3 {
                return Err(format!(
                    "token file '{}' must have at least 3 columns (token, user name, user uid), found {}",
                    i + 1,
                    record.len()
                ));
            }
            let token = record[0].trim().to_string();
            if token.is_empty() {
                tracing::warn!(line = i + 1, "empty token in the token auth file, skipping");
                continue;
            }
            let mut user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                ..UserInfo::default()
            };
            if let Some(groups) = record.get(3) {
                if !groups.is_empty() {
                    user.groups = groups.split(',').map(str::to_string).collect();
                }
            }
            if tokens.contains_key(&token) {
                tracing::warn!(
                    line = i + 1,
                    "duplicate token in the token auth file, the last one is used"
                );
            }
            tokens.insert(token, user);
        }
        Ok(TokenFile { tokens })
    }

    /// Adds (or replaces) one token.
    pub fn insert(&mut self, token: String, user: UserInfo) {
        self.tokens.insert(token, user);
    }

    /// The user of `token`.
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// upstream tokenfile_test.go TestTokenFile
    #[test]
    fn reads_upstreams_example() {
        let f = TokenFile::parse(
            "token1,user1,uid1\ntoken2,user2,uid2\ntoken3,user3,uid3,\"group1,group2\"\ntoken4,user4,uid4,\"group2\"\ntoken5,user5,uid5,group5\ntoken6,user6,uid6,group5,otherdata\ntoken7,user7,uid7,\"group1,group2\",otherdata\n",
        )
        .unwrap();
        let u = |t: &str| f.user(t).cloned();
        assert_eq!(u("token1").unwrap().name, "user1");
        assert_eq!(u("token1").unwrap().uid, "uid1");
        assert!(u("token1").unwrap().groups.is_empty());
        assert_eq!(u("token3").unwrap().groups, ["group1", "group2"]);
        assert_eq!(u("token4").unwrap().groups, ["group2"]);
        assert_eq!(u("token5").unwrap().groups, ["group5"]);
        assert_eq!(u("token6").unwrap().groups, ["group5"]);
        assert_eq!(u("token7").unwrap().groups, ["group1", "group2"]);
        assert!(u("token8").is_none());
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(TokenFile::parse("token1,user1\n").is_err());
        assert!(TokenFile::parse("token1,\"user1,uid\n").is_err());
        let f = TokenFile::parse("# comment\n,user,uid\ntoken,a,1\ntoken,b,2\n").unwrap();
        assert_eq!(f.user("token").unwrap().name, "b");
        assert!(f.user("").is_none());
    }
}
