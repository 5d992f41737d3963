//! Skill discovery and the agent's prompt (REQ-109…REQ-113).

use std::fs;
use std::path::Path;

use sinew_agent::{SkillSet, skills::parse_frontmatter};
use sinew_testing::MockResponse;

fn skill(root: &Path, folder: &str, name: &str, description: &str) {
    let dir = root.join(folder);
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nSteps...\n"),
    )
    .unwrap();
}

#[test]
fn later_directories_override_earlier_ones() {
    let (user, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    skill(user.path(), "foo", "foo", "the user's foo");
    skill(user.path(), "bar", "bar", "only the user has bar");
    skill(project.path(), "foo-v2", "foo", "the project's foo");
    let set = SkillSet::load([user.path(), project.path()]);
    assert_eq!(set.len(), 2);
    let foo = set.get("foo").unwrap();
    assert_eq!(foo.description, "the project's foo");
    assert_eq!(foo.location, project.path().join("foo-v2").join("SKILL.md"));
    assert_eq!(foo.source, project.path().display().to_string());
    assert_eq!(set.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["bar", "foo"]);
}

#[test]
fn missing_directories_and_stray_entries_are_ignored_and_bad_skills_reported() {
    let root = tempfile::tempdir().unwrap();
    skill(root.path(), "good", "good", "works");
    fs::create_dir(root.path().join("no-skill-file")).unwrap();
    fs::write(root.path().join("README.md"), "not a folder").unwrap();
    let broken = root.path().join("broken");
    fs::create_dir(&broken).unwrap();
    fs::write(broken.join("SKILL.md"), "---\ndescription: no name\n---\n").unwrap();

    let set = SkillSet::load([root.path().join("does-not-exist").as_path(), root.path()]);
    assert_eq!(set.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["good"]);
    assert_eq!(set.skipped().len(), 1);
    assert_eq!(set.skipped()[0].path, broken.join("SKILL.md"));
    assert_eq!(set.skipped()[0].reason, "frontmatter has no `name`");
}

#[test]
fn a_skills_path_that_is_not_a_directory_is_reported() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("skills");
    fs::write(&file, "not a directory").unwrap();
    let set = SkillSet::load([&file]);
    assert!(set.is_empty());
    assert_eq!(set.skipped().len(), 1);
    assert_eq!(set.skipped()[0].path, file);
    assert!(set.skipped()[0].reason.starts_with("cannot read the directory"), "{}", set.skipped()[0].reason);
}

#[test]
fn merge_lets_the_other_set_win() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    skill(a.path(), "x", "x", "from a");
    skill(b.path(), "x", "x", "from b");
    let mut set = SkillSet::load_dir(a.path(), "builtin");
    set.merge(SkillSet::load_dir(b.path(), "project"));
    let x = set.get("x").unwrap();
    assert_eq!((x.description.as_str(), x.source.as_str()), ("from b", "project"));
}

#[test]
fn a_real_skill_file_parses() {
    // The shape of Anthropic's published skills: extra keys, a long quoted description.
    let content = "---\nname: webapp-testing\ndescription: \"Toolkit for interacting with and testing local web \
                   applications using Playwright.\"\nlicense: Complete terms in LICENSE.txt\n---\n\n# Web App Testing\n";
    let (name, description) = parse_frontmatter(content).unwrap();
    assert_eq!(name, "webapp-testing");
    assert!(description.starts_with("Toolkit for") && description.ends_with("Playwright."));
}

#[tokio::test]
async fn the_agent_lists_its_skills_in_the_system_prompt() {
    let root = tempfile::tempdir().unwrap();
    skill(root.path(), "pdf", "pdf", "Fill in PDF forms & more");
    let set = SkillSet::load([root.path()]);
    let (agent, mock) = crate::agent([MockResponse::text("ok")]);
    let mut agent = agent.with_system_prompt("You are helpful.").with_skills(&set);
    assert!(agent.system_prompt().starts_with("You are helpful.\n\n<available_skills>\n"));
    agent.prompt("fill the form").finish().await;
    let prompt = &mock.requests()[0].system_prompt;
    assert!(prompt.contains("<name>pdf</name>\n<description>Fill in PDF forms &amp; more</description>"), "{prompt}");
    assert!(prompt.ends_with("</available_skills>"));

    // No skills, no block.
    let (agent, _) = crate::agent([]);
    assert_eq!(agent.with_system_prompt("p").with_skills(&SkillSet::default()).system_prompt(), "p");
}
