//! The requirements map (`docs/requirements.md`) against spec 004 and the code.
//!
//! Every requirement the spec defines (`**REQ-NNN:**`) has one row, in order, with the spec's
//! index title, where sinew implements it and the tests that fail if it breaks. Each reference is
//! `` `path` `` or `` `path#name` ``: the path must exist; in the code column `name` must appear
//! in the file as a word, in the tests column the file must define `fn name` (a test) or
//! `struct name` (the holder of a guide's doctests). So a renamed test, a moved module or a new
//! requirement without a row fails `cargo xtask tidy`.
//!
//! The requirements that are documents are held to their topics the same way: each document of
//! [`DOCUMENTS`] must keep its headings.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

pub(crate) const SPEC: &str = "docs/specs/004-agent-loop-roadmap.md";
pub(crate) const MAP: &str = "docs/requirements.md";

/// One row of the map.
#[derive(Debug, PartialEq)]
struct Row<'a> {
    req: u32,
    title: &'a str,
    code: &'a str,
    tests: &'a str,
}

/// The documents requirements ask for, and the headings (`#` lines) each must keep.
const DOCUMENTS: &[(&str, &[&str])] = &[
    // REQ-179: the five topics of the runbook.
    (
        "docs/operations.md",
        &["1. Retries", "2. Context overflow", "3. Provider failover", "4. MCP server crashes", "5. Profiling"],
    ),
    // REQ-220: the agent's interface and the roadmap.
    ("ARCHITECTURE.md", &["The agent's interface", "Agent events", "Roadmap"]),
    // REQ-174: one section per provider.
    (
        "docs/providers.md",
        &[
            "Anthropic Messages",
            "OpenAI Chat Completions and compatible servers",
            "OpenAI Responses",
            "Azure OpenAI",
            "Gemini API",
            "Vertex AI",
            "AWS Bedrock ConverseStream",
        ],
    ),
];

pub(crate) fn check(root: &Path, problems: &mut Vec<String>) -> Result<()> {
    let spec = std::fs::read_to_string(root.join(SPEC)).with_context(|| format!("cannot read {SPEC}"))?;
    let map = std::fs::read_to_string(root.join(MAP)).with_context(|| format!("cannot read {MAP}"))?;
    let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
    problems.extend(problems_of(&spec, &map, &read));
    check_documents(&read, problems);
    Ok(())
}

/// Each document of [`DOCUMENTS`] exists and keeps its headings.
fn check_documents(read: &dyn Fn(&str) -> Option<String>, problems: &mut Vec<String>) {
    for (path, headings) in DOCUMENTS {
        let Some(text) = read(path) else {
            problems.push(format!("{path} does not exist"));
            continue;
        };
        let mut fenced = false;
        let mut present: Vec<&str> = Vec::new();
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            } else if !fenced && let Some(heading) = line.strip_prefix('#') {
                present.push(heading.trim_start_matches('#').trim());
            }
        }
        for heading in *headings {
            if !present.contains(heading) {
                problems.push(format!("{path} has no heading {heading:?}"));
            }
        }
    }
}

/// What is wrong with `map` for `spec`; `read` gives a repository file's text, `None` if absent.
fn problems_of(spec: &str, map: &str, read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let defined = defined(spec);
    let titles = index_titles(spec);
    let rows: Vec<Row<'_>> = map.lines().filter_map(row).collect();
    let listed: Vec<u32> = rows.iter().map(|r| r.req).collect();
    if listed != defined {
        let missing: Vec<String> = defined.iter().filter(|r| !listed.contains(r)).map(|r| req(*r)).collect();
        let extra: Vec<String> = listed.iter().filter(|r| !defined.contains(r)).map(|r| req(*r)).collect();
        problems.push(format!(
            "{MAP}: rows must be the spec's requirements, each once, in numeric order (missing: [{}]; not in the spec: [{}])",
            missing.join(", "),
            extra.join(", "),
        ));
    }
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    for row in &rows {
        let at = req(row.req);
        if let Some(title) = titles.get(&row.req)
            && row.title != *title
        {
            problems.push(format!("{MAP}: {at}'s title is not the spec index's {title:?}"));
        }
        if row.title.is_empty() {
            problems.push(format!("{MAP}: {at} has no title"));
        }
        for (column, cell, tests) in [("code", row.code, false), ("tests", row.tests, true)] {
            let references = references(cell);
            if references.is_empty() {
                problems.push(format!("{MAP}: {at} names no {column} (`path` or `path#name` in backticks)"));
            }
            for reference in references {
                let (path, name) = reference.split_once('#').unwrap_or((reference, ""));
                let text = files.entry(path.to_owned()).or_insert_with(|| read(path));
                let Some(text) = text else {
                    problems.push(format!("{MAP}: {at}: {path} does not exist"));
                    continue;
                };
                if name.is_empty() {
                    continue;
                }
                let found = if tests { is_test(path, text, name) } else { mentions(path, text, name) };
                if !found {
                    let what = if tests {
                        format!("no test `{name}` (a `#[test]` fn, a `*Doctests` struct, or a check of xtask)")
                    } else {
                        format!("no `{name}` outside comments")
                    };
                    problems.push(format!("{MAP}: {at}: {path} has {what}"));
                }
            }
        }
    }
    problems
}

fn req(number: u32) -> String {
    format!("REQ-{number:03}")
}

/// The requirements the spec defines, in numeric order (the spec's own order groups them by
/// milestone: REQ-180 to REQ-221 come between REQ-147 and REQ-148).
fn defined(spec: &str) -> Vec<u32> {
    let mut numbers: Vec<u32> =
        spec.lines().filter_map(|line| line.split_once("**REQ-")?.1.split_once(":**")?.0.parse().ok()).collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
}

/// The spec's requirement index: number → one-line title.
fn index_titles(spec: &str) -> BTreeMap<u32, &str> {
    spec.lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix("| REQ-")?.split(" | ");
            let number = cells.next()?.trim().parse().ok()?;
            Some((number, cells.next()?.trim()))
        })
        .collect()
}

/// A map row: `| REQ-NNN | title | code | tests |`.
fn row(line: &str) -> Option<Row<'_>> {
    let cells: Vec<&str> = line.strip_prefix("| REQ-")?.strip_suffix('|')?.split(" | ").map(str::trim).collect();
    match cells.as_slice() {
        [number, title, code, tests] => Some(Row { req: number.parse().ok()?, title, code, tests }),
        _ => None,
    }
}

/// The backticked references of a cell.
fn references(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).filter(|r| !r.is_empty()).collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `word` occurs in `text` not inside a longer identifier.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// `name` is in `text` as a word, outside `//` comments in Rust sources.
fn mentions(path: &str, text: &str, name: &str) -> bool {
    if !path.ends_with(".rs") {
        return has_word(text, name);
    }
    text.lines().filter(|l| !l.trim_start().starts_with("//")).any(|line| has_word(line, name))
}

/// `name` is a test of `text`: a function under `#[test]` or `#[tokio::test]`, the holder of a
/// guide's or a type's doctests (`struct *Doctests`), or, in xtask, one of CI's checks.
fn is_test(path: &str, text: &str, name: &str) -> bool {
    if name.ends_with("Doctests") && defines(text, "struct", name) {
        return true;
    }
    if path.starts_with("xtask/src/") && defines(text, "fn", name) {
        return true;
    }
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(at, line)| {
        defines(line, "fn", name)
            && lines[..at]
                .iter()
                .rev()
                .map(|l| l.trim())
                .take_while(|l| l.starts_with("#[") || l.starts_with("///"))
                .any(|l| l.starts_with("#[test]") || l.starts_with("#[tokio::test"))
    })
}

/// `text` defines `name` with `keyword` (`fn`, `struct`).
fn defines(text: &str, keyword: &str, name: &str) -> bool {
    let definition = format!("{keyword} {name}");
    text.match_indices(&definition).any(|(at, _)| {
        text[at + definition.len()..].starts_with(['(', '<', ';', ' ', '{']) && !text[..at].ends_with(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "\
- [x] **REQ-001:** Define `Content`. *(Source: [AR])*
- [x] **REQ-003:** Later, without an index row, but defined first.
- [ ] **REQ-002:** Define `Message`.
| REQ | Description | Level |
|-----|-------------|-------|
| REQ-001 | `Content` enum | 1 | 1.1 |
| REQ-002 | `Message` enum | 1 | 1.1 |
";

    fn files(path: &str) -> Option<String> {
        match path {
            "src/content.rs" => Some(
                "// Content, Contents\npub enum Content {}\nfn helper() {}\n#[test]\nfn content_round_trips() {}\n\
                 #[cfg(doctest)]\nstruct GuideDoctests;\n"
                    .into(),
            ),
            "docs/guide.md" => Some("# Guide".into()),
            _ => None,
        }
    }

    fn problems(map: &str) -> Vec<String> {
        problems_of(SPEC, map, &files)
    }

    const GOOD: &str = "\
| REQ | requirement | code | tests |
|---|---|---|---|
| REQ-001 | `Content` enum | `src/content.rs#Content` | `src/content.rs#content_round_trips` |
| REQ-002 | `Message` enum | `src/content.rs` | `src/content.rs#content_round_trips`, `docs/guide.md` |
| REQ-003 | A title of our own | `docs/guide.md` | `src/content.rs#content_round_trips` |
";

    #[test]
    fn a_complete_map_passes() {
        assert_eq!(problems(GOOD), Vec::<String>::new());
    }

    #[test]
    fn missing_extra_and_misordered_rows_fail() {
        let without_two: String = GOOD.lines().filter(|l| !l.contains("REQ-002")).map(|l| format!("{l}\n")).collect();
        assert!(problems(&without_two)[0].contains("missing: [REQ-002]"), "{:?}", problems(&without_two));
        let extra = format!("{GOOD}| REQ-009 | x | `docs/guide.md` | `docs/guide.md` |\n");
        assert!(problems(&extra)[0].contains("not in the spec: [REQ-009]"));
        let swapped = GOOD.replace("REQ-001", "REQ-00X").replace("REQ-002", "REQ-001").replace("REQ-00X", "REQ-002");
        assert!(problems(&swapped)[0].contains("in numeric order"));
    }

    #[test]
    fn titles_follow_the_index() {
        let retitled = GOOD.replace("| `Content` enum |", "| Content |");
        assert_eq!(
            problems(&retitled),
            ["docs/requirements.md: REQ-001's title is not the spec index's \"`Content` enum\""]
        );
    }

    #[test]
    fn references_must_resolve() {
        let cases = [
            ("src/content.rs#Content`", "src/content.rs#Contents`", "has no `Contents` outside comments"),
            (
                "src/content.rs#content_round_trips` |\n| REQ-002",
                "src/content.rs#content_round` |\n| REQ-002",
                "has no test `content_round`",
            ),
            (
                "src/content.rs#content_round_trips` |\n| REQ-002",
                "src/content.rs#helper` |\n| REQ-002",
                "has no test `helper`",
            ),
            ("src/content.rs#content_round_trips` |\n| REQ-002", "src/content.rs#GuideDoctests` |\n| REQ-002", ""),
            ("`docs/guide.md` | `src", "`docs/gone.md` | `src", "docs/gone.md does not exist"),
            ("| `src/content.rs` |", "| src/content.rs |", "names no code"),
            ("`src/content.rs#content_round_trips`, `docs/guide.md`", "MISSING", "names no tests"),
        ];
        for (from, to, expected) in cases {
            let map = GOOD.replacen(from, to, 1);
            assert_ne!(map, GOOD, "{from}");
            let found = problems(&map);
            if expected.is_empty() {
                assert_eq!(found, Vec::<String>::new(), "{to}");
            } else {
                assert!(found.len() == 1 && found[0].contains(expected), "{to}: {found:?}");
            }
        }
    }

    #[test]
    fn documents_keep_their_headings() {
        let all = |path: &str| {
            DOCUMENTS.iter().find(|(p, _)| *p == path).map(|(_, h)| h.iter().map(|h| format!("## {h}\n")).collect())
        };
        let mut problems = Vec::new();
        check_documents(&all, &mut problems);
        assert_eq!(problems, Vec::<String>::new());
        let without_roadmap =
            |path: &str| all(path).map(|text: String| text.replace("## Roadmap\n", "```text\n## Roadmap\n```\n"));
        check_documents(&without_roadmap, &mut problems);
        assert_eq!(problems, ["ARCHITECTURE.md has no heading \"Roadmap\""]);
        check_documents(&|_: &str| None, &mut problems);
        assert_eq!(problems.len(), 1 + DOCUMENTS.len());
    }

    #[test]
    fn words_and_functions_are_whole() {
        assert!(has_word("enum Content {}", "Content"));
        assert!(!has_word("enum ContentBlock {}", "Content"));
        assert!(!has_word("enum MyContent {}", "Content"));
        assert!(defines("async fn runs() {}", "fn", "runs"));
        assert!(defines("fn runs<T>() {}", "fn", "runs"));
        assert!(defines("struct GuideDoctests;", "struct", "GuideDoctests"));
        assert!(!defines("fn runs_fast() {}", "fn", "runs"));
        assert!(!defines("fn reruns() {}", "fn", "runs"));
    }
}
