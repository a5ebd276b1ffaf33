//! Runs every recipe in docs/recipes.md and compares its output with the
//! block the page shows under it, so the docs cannot rot.

use std::path::Path;
use std::process::Command;

/// Pairs of (```sh block, the ```text block right after it).
fn recipes(page: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((lang.to_owned(), body.join("\n")));
        }
    }
    blocks
        .windows(2)
        .filter(|w| w[0].0 == "sh" && w[1].0 == "text")
        .map(|w| (w[0].1.clone(), w[1].1.clone()))
        .collect()
}

#[test]
fn every_recipe_prints_what_the_docs_show() {
    run_recipes("docs/recipes.md", 8);
}

#[test]
fn the_http_front_recipe_prints_what_the_docs_show() {
    run_recipes("docs/http-front.md", 1);
}

fn run_recipes(name: &str, at_least: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join(name)).expect(name);
    let recipes = recipes(&page);
    assert!(
        recipes.len() >= at_least,
        "expected the recipes, found {}",
        recipes.len()
    );
    let bin = Path::new(env!("CARGO_BIN_EXE_mcp-chain"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = std::env::temp_dir().join(format!(
        "mcp-chain-recipes-{}-{}",
        std::process::id(),
        name.replace('/', "-")
    ));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    // The recipes run from the repository root (they name config/demo.toml);
    // what they write under /tmp goes to a scratch folder instead.
    for (script, expected) in recipes {
        let script = script.replace("/tmp/", &format!("{}/", scratch.display()));
        let out = Command::new("bash")
            .args(["-o", "pipefail", "-c", &script])
            .current_dir(root)
            .env("PATH", &path)
            .env("TMPDIR", &scratch)
            .env_remove("RUST_LOG")
            .output()
            .expect("bash runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "recipe failed:\n{script}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout.trim_end(), expected.trim_end(), "recipe:\n{script}");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
