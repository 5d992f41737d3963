//! Agent Skills (REQ-109…REQ-113): folders with a `SKILL.md` whose frontmatter names and
//! describes the skill. The agent's system prompt lists them in an `<available_skills>` block;
//! the model reads a skill's `SKILL.md` (with a file tool) when the task calls for it.
//!
//! ```text
//! skills/
//!   pdf-forms/
//!     SKILL.md        ---
//!                     name: pdf-forms
//!                     description: Fill in PDF forms. Use when the user gives a PDF with fields.
//!                     ---
//!                     (instructions the model reads on demand)
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Why a `SKILL.md` was not taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SkillError {
    /// The file does not start with a `---` line, or the block is not closed by another.
    #[error("invalid frontmatter: {0}")]
    InvalidFrontmatter(&'static str),
    /// The frontmatter has no (or an empty) `name` or `description`.
    #[error("frontmatter has no `{0}`")]
    MissingField(&'static str),
}

/// One skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// The frontmatter's `name`; a set holds one skill per name.
    pub name: String,
    /// The frontmatter's `description`: what the skill does and when to use it, shown to the model.
    pub description: String,
    /// The skill's `SKILL.md`.
    pub location: PathBuf,
    /// Where it was loaded from, as the loader named it (`"user"`, `"project"`...).
    pub source: String,
}

/// A skill folder that was skipped, and why.
#[derive(Debug)]
pub struct SkippedSkill {
    /// The `SKILL.md` that was skipped, or the skills directory when it could not be read.
    pub path: PathBuf,
    /// Why it was skipped: a read error, or what is wrong with its frontmatter.
    pub reason: String,
}

/// Skills by name, sorted.
#[derive(Debug, Default)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
    skipped: Vec<SkippedSkill>,
}

impl SkillSet {
    /// Loads every directory in order; a skill of a later directory replaces an earlier one of
    /// the same name. Missing directories are skipped silently; invalid skills are skipped with a
    /// warning and listed in [`SkillSet::skipped`]. Each directory's source is its path.
    pub fn load<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> SkillSet {
        let mut set = SkillSet::default();
        for dir in dirs {
            let dir = dir.as_ref();
            set.merge(SkillSet::load_dir(dir, &dir.display().to_string()));
        }
        set
    }

    /// Loads the skills of one directory: each subdirectory holding a `SKILL.md`.
    pub fn load_dir(dir: &Path, source: &str) -> SkillSet {
        let mut set = SkillSet::default();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return set,
            Err(error) => {
                set.skip(dir.to_path_buf(), format!("cannot read the directory: {error}"));
                return set;
            }
        };
        let mut folders: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        folders.sort();
        for folder in folders.into_iter().filter(|p| p.is_dir()) {
            let location = folder.join("SKILL.md");
            let content = match std::fs::read_to_string(&location) {
                Ok(content) => content,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => {
                    set.skip(location, format!("cannot read it: {error}"));
                    continue;
                }
            };
            match parse_frontmatter(&content) {
                Ok((name, description)) => {
                    let skill = Skill { name: name.clone(), description, location, source: source.to_owned() };
                    set.skills.insert(name, skill);
                }
                Err(error) => set.skip(location, error.to_string()),
            }
        }
        set
    }

    fn skip(&mut self, path: PathBuf, reason: String) {
        tracing::warn!(path = %path.display(), %reason, "skipping a skill");
        self.skipped.push(SkippedSkill { path, reason });
    }

    /// Adds `other`'s skills; on a name conflict, `other`'s wins.
    pub fn merge(&mut self, other: SkillSet) {
        self.skills.extend(other.skills);
        self.skipped.extend(other.skipped);
    }

    /// Adds one skill, replacing one of the same name.
    pub fn insert(&mut self, skill: Skill) {
        self.skills.insert(skill.name.clone(), skill);
    }

    /// The skill named `name`, if the set holds one.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// The skills, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// How many skills the set holds; skipped folders do not count.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether the set holds no skills (then [`SkillSet::format_for_prompt`] is empty).
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill folders that were not taken, and why.
    pub fn skipped(&self) -> &[SkippedSkill] {
        &self.skipped
    }

    /// The `<available_skills>` block for a system prompt; empty when there are no skills.
    pub fn format_for_prompt(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out = String::from("<available_skills>\n");
        for skill in self.skills.values() {
            let _ = write!(
                out,
                "<skill>\n<name>{}</name>\n<description>{}</description>\n<location>{}</location>\n</skill>\n",
                xml_escape(&skill.name),
                xml_escape(&skill.description),
                xml_escape(&skill.location.display().to_string()),
            );
        }
        out.push_str("</available_skills>");
        out
    }
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The `name` and `description` of a `SKILL.md`'s frontmatter: the block between a first line
/// `---` and the next `---` line. Values may be quoted, and may continue on indented lines or
/// be YAML block scalars (`|`, `>`); other keys are ignored.
pub fn parse_frontmatter(content: &str) -> Result<(String, String), SkillError> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let mut lines = content.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(SkillError::InvalidFrontmatter("the file does not start with `---`"));
    }
    let mut block = Vec::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        block.push(line);
    }
    if !closed {
        return Err(SkillError::InvalidFrontmatter("no closing `---`"));
    }
    let field = |key: &str| value_of(&block, key).filter(|v| !v.is_empty());
    let name = field("name").ok_or(SkillError::MissingField("name"))?;
    let description = field("description").ok_or(SkillError::MissingField("description"))?;
    Ok((name, description))
}

/// The value of a top-level `key:` in frontmatter lines.
fn value_of(block: &[&str], key: &str) -> Option<String> {
    let index = block.iter().position(|line| {
        line.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':')) && !line.starts_with(' ')
    })?;
    let first = block[index][key.len()..].trim_start()[1..].trim();
    let continuation: Vec<&str> = block[index + 1..]
        .iter()
        .take_while(|line| line.starts_with(' ') || line.starts_with('\t') || line.trim().is_empty())
        .map(|line| line.trim())
        .collect();
    let value = match first.chars().next() {
        // `|` keeps line breaks, `>` folds them; chomping indicators are accepted.
        Some('|') => continuation.join("\n").trim_end().to_owned(),
        Some('>') => fold(&continuation),
        _ => {
            let mut parts = vec![first];
            parts.extend(continuation.iter().copied().filter(|l| !l.is_empty()));
            unquote(&parts.join(" ")).to_owned()
        }
    };
    Some(value)
}

fn fold(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        if line.is_empty() {
            out.push('\n');
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out.trim_end().to_owned()
}

fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_gives_name_and_description() {
        let skill = "---\nname: pdf\ndescription: \"Fill in PDF forms\"\nlicense: MIT\n---\n# PDF\n";
        assert_eq!(parse_frontmatter(skill).unwrap(), ("pdf".into(), "Fill in PDF forms".into()));
        let single = "---\r\nname: 'x'\r\ndescription: y: z\r\n---\r\n";
        assert_eq!(parse_frontmatter(single).unwrap(), ("x".into(), "y: z".into()));
    }

    #[test]
    fn multi_line_descriptions() {
        let folded = "---\nname: a\ndescription: >-\n  Fills forms.\n  Use for PDFs.\nmetadata:\n  k: v\n---\n";
        assert_eq!(parse_frontmatter(folded).unwrap().1, "Fills forms. Use for PDFs.");
        let literal = "---\nname: a\ndescription: |\n  line one\n  line two\n---\n";
        assert_eq!(parse_frontmatter(literal).unwrap().1, "line one\nline two");
        let plain = "---\nname: a\ndescription: starts here\n  and goes on\n---\n";
        assert_eq!(parse_frontmatter(plain).unwrap().1, "starts here and goes on");
    }

    #[test]
    fn bad_frontmatter_is_named() {
        assert_eq!(
            parse_frontmatter("# no frontmatter"),
            Err(SkillError::InvalidFrontmatter("the file does not start with `---`"))
        );
        assert_eq!(parse_frontmatter("---\nname: a\n"), Err(SkillError::InvalidFrontmatter("no closing `---`")));
        assert_eq!(parse_frontmatter("---\ndescription: d\n---\n"), Err(SkillError::MissingField("name")));
        assert_eq!(
            parse_frontmatter("---\nname: a\ndescription: \"\"\n---\n"),
            Err(SkillError::MissingField("description"))
        );
        // A key nested under another is not the top-level one.
        assert_eq!(
            parse_frontmatter("---\nmeta:\n  name: a\ndescription: d\n---\n"),
            Err(SkillError::MissingField("name"))
        );
        assert_eq!(parse_frontmatter(""), Err(SkillError::InvalidFrontmatter("the file does not start with `---`")));
    }

    #[test]
    fn the_prompt_block_is_escaped_xml_sorted_by_name() {
        let mut set = SkillSet::default();
        assert_eq!(set.format_for_prompt(), "");
        for (name, description) in [("zeta", "last"), ("a<b>", "Tom & \"Jerry\" 'quoted'")] {
            set.insert(Skill {
                name: name.into(),
                description: description.into(),
                location: PathBuf::from(format!("/skills/{name}/SKILL.md")),
                source: "test".into(),
            });
        }
        assert_eq!(
            set.format_for_prompt(),
            "<available_skills>\n\
             <skill>\n<name>a&lt;b&gt;</name>\n<description>Tom &amp; &quot;Jerry&quot; &apos;quoted&apos;</description>\n<location>/skills/a&lt;b&gt;/SKILL.md</location>\n</skill>\n\
             <skill>\n<name>zeta</name>\n<description>last</description>\n<location>/skills/zeta/SKILL.md</location>\n</skill>\n\
             </available_skills>"
        );
    }
}
